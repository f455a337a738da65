/**
 * The one error base class at turnstate's edges. Inside the actor system a failure is a
 * value (an `error` turn state and part); at the library boundary it is a TurnstateError
 * with a stable string `code` that each wire protocol maps in its own error map.
 */
export class TurnstateError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, options?: { cause?: unknown; details?: Record<string, unknown> | undefined }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TurnstateError';
    this.code = code;
    this.details = options?.details;
  }
}

/** A registration (tool, part type, turn state, actor) broke a rule; the message says which and how to fix it. */
export class RegistrationError extends TurnstateError {
  readonly rule: string;
  constructor(rule: string, message: string, details?: Record<string, unknown>) {
    super('registration.invalid', message, details === undefined ? undefined : { details });
    this.name = 'RegistrationError';
    this.rule = rule;
  }
}

/**
 * Every ModelError code, as a runtime list (scripts and recordings are checked against it); the
 * ModelErrorCode union is derived from it, so the two cannot drift.
 */
export const MODEL_ERROR_CODES = Object.freeze([
  'model.rate_limited',
  'model.overloaded',
  'model.invalid_request',
  'model.authentication',
  'model.permission',
  'model.not_found',
  'model.connection',
  'model.timeout',
  'model.aborted',
  'model.max_tokens',
  'model.context_window',
  'model.refusal',
  'model.stream_error',
  'model.server_error',
  'model.unknown',
] as const);

/** Model failures, mapped from the provider SDK. `retryable` drives bounded backoff. */
export type ModelErrorCode = (typeof MODEL_ERROR_CODES)[number];

/** Whether `code` is one of MODEL_ERROR_CODES. */
export function isModelErrorCode(code: unknown): code is ModelErrorCode {
  return (MODEL_ERROR_CODES as readonly unknown[]).includes(code);
}

export class ModelError extends TurnstateError {
  override readonly code: ModelErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  constructor(
    code: ModelErrorCode,
    message: string,
    opts: { retryable?: boolean | undefined; retryAfterMs?: number | undefined; status?: number | undefined; cause?: unknown } = {},
  ) {
    super(code, message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ModelError';
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    this.status = opts.status;
  }
}
