/**
 * JSON Schemas of AAP request bodies, compiled once with ajv. A body that breaks them is a 400
 * `request.invalid` whose `path` is the JSON Pointer of the first offending field.
 *
 * A `tool_permission` reason is bounded after the schema (`reasonTooLong`): MAX_APPROVAL_REASON_CHARS
 * counts UTF-16 code units (`String.length`) on every channel, where ajv's `maxLength` counts code
 * points; 1,500 emoji passed the schema and were refused behind it with a 500.
 */
import { MAX_APPROVAL_REASON_CHARS } from '../../limits.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { HttpError } from '../http.js';
import type { CreateSessionRequest, SessionTurnRequest, TurnMessage } from './types.js';

const toolSpec = {
  type: 'object',
  required: ['name', 'description', 'parameters'],
  properties: {
    // The name rule is TOOL_NAME, checked by checkClientTools (agents.ts): the one rule send() applies.
    name: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    parameters: { type: 'object' },
  },
} as const;

const serverToolRef = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, trust: { type: 'boolean' } },
} as const;

const contentBlock = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
} as const;

const content = {
  anyOf: [{ type: 'string' }, { type: 'array', items: contentBlock }],
} as const;

const options = { type: 'object', additionalProperties: { type: 'string' } } as const;

/** turnstate extension: part types the client consumes (e.g. ["llm-context"] for a peer LLM). */
const consumes = { type: 'array', maxItems: 64, items: { type: 'string', minLength: 1, maxLength: 256 } } as const;

const turnMessage = {
  type: 'object',
  required: ['role'],
  discriminator: { propertyName: 'role' },
  oneOf: [
    {
      properties: { role: { const: 'user' }, content },
      required: ['role', 'content'],
    },
    {
      properties: { role: { const: 'tool' }, toolCallId: { type: 'string', minLength: 1 }, content },
      required: ['role', 'toolCallId', 'content'],
    },
    {
      properties: {
        role: { const: 'tool_permission' },
        toolCallId: { type: 'string', minLength: 1 },
        granted: { type: 'boolean' },
        // At most MAX_APPROVAL_REASON_CHARS UTF-16 code units: checked after the schema (reasonTooLong).
        reason: { type: 'string' },
      },
      required: ['role', 'toolCallId', 'granted'],
    },
  ],
} as const;

const historyMessage = {
  type: 'object',
  required: ['role'],
  discriminator: { propertyName: 'role' },
  oneOf: [
    { properties: { role: { const: 'system' }, content: { type: 'string' } }, required: ['role', 'content'] },
    { properties: { role: { const: 'user' }, content }, required: ['role', 'content'] },
    { properties: { role: { const: 'assistant' }, content }, required: ['role', 'content'] },
    {
      properties: { role: { const: 'tool' }, toolCallId: { type: 'string', minLength: 1 }, content },
      required: ['role', 'toolCallId', 'content'],
    },
  ],
} as const;

export const turnRequestSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    agent: {
      type: 'object',
      properties: { tools: { type: 'array', items: serverToolRef }, options },
    },
    stream: { type: 'string' },
    messages: { type: 'array', minItems: 1, items: turnMessage },
    tools: { type: 'array', items: toolSpec },
    consumes,
  },
} as const;

export const createSessionRequestSchema = {
  type: 'object',
  required: ['agent'],
  properties: {
    agent: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, tools: { type: 'array', items: serverToolRef }, options },
    },
    messages: { type: 'array', items: historyMessage },
    tools: { type: 'array', items: toolSpec },
    consumes,
  },
} as const;

const ajv = new Ajv({ allErrors: false, discriminator: true, strict: false });
const validateTurn = ajv.compile<SessionTurnRequest>(turnRequestSchema);
const validateCreate = ajv.compile<CreateSessionRequest>(createSessionRequestSchema);

/** Validates a `POST /sessions/{id}/turns` body or throws 400 naming the field. */
export function parseTurnRequest(body: unknown): SessionTurnRequest {
  const req = check(validateTurn, body, ['user', 'tool', 'tool_permission']);
  req.messages.forEach(reasonTooLong);
  return req;
}

/**
 * Refuses a `tool_permission` reason over MAX_APPROVAL_REASON_CHARS, counted as `answerApproval`
 * counts it on every channel: UTF-16 code units (`String.length`; an emoji is usually 2).
 */
function reasonTooLong(m: TurnMessage, i: number): void {
  if (m.role !== 'tool_permission' || m.reason === undefined || m.reason.length <= MAX_APPROVAL_REASON_CHARS) return;
  const path = `/messages/${i}/reason`;
  throw new HttpError(400, 'request.invalid', `${path} must NOT have more than ${MAX_APPROVAL_REASON_CHARS} characters (UTF-16 code units; it has ${m.reason.length})`, { path });
}

/** Validates a `POST /sessions` body or throws 400 naming the field. */
export function parseCreateSessionRequest(body: unknown): CreateSessionRequest {
  return check(validateCreate, body, ['system', 'user', 'assistant', 'tool']);
}

function check<T>(validate: ValidateFunction<T>, body: unknown, roles: readonly string[]): T {
  if (body === undefined) throw new HttpError(400, 'body.missing', 'a JSON request body is required', { path: '' });
  if (validate(body)) return body;
  const err = validate.errors?.[0];
  throw new HttpError(400, 'request.invalid', err === undefined ? 'request body is invalid' : describe(err, roles), {
    path: err === undefined ? '' : pathOf(err),
  });
}

/** JSON Pointer of the field an ajv error is about (the missing property included). */
export function pathOf(err: ErrorObject): string {
  if (err.keyword === 'required') return `${err.instancePath}/${String(err.params['missingProperty'])}`;
  if (err.keyword === 'discriminator' && err.params['tag'] !== undefined) return `${err.instancePath}/${String(err.params['tag'])}`;
  return err.instancePath;
}

function describe(err: ErrorObject, roles: readonly string[]): string {
  const path = pathOf(err);
  const where = path === '' ? 'request body' : path;
  if (err.keyword === 'required') return `${where} is required`;
  if (err.keyword === 'discriminator') {
    const value = err.params['tagValue'];
    return value === undefined
      ? `${where} is required and must be one of ${roles.map((r) => JSON.stringify(r)).join(', ')}`
      : `${where} ${JSON.stringify(value)} is not a valid role here: expected one of ${roles.map((r) => JSON.stringify(r)).join(', ')}`;
  }
  if (err.keyword === 'const' || err.keyword === 'enum') return `${where} must be one of ${JSON.stringify(err.params['allowedValues'] ?? err.params['allowedValue'])}`;
  return `${where} ${err.message ?? 'is invalid'}`;
}
