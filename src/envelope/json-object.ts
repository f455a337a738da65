/** A JSON object as the envelope's checks read one: keys to unknown values. */
export type Obj = Record<string, unknown>;

/** A non-null, non-array object (what JSON calls an object). */
export const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
