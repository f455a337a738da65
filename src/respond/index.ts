/**
 * respond(): the tool schema generated from the registries, the parser (ajv + semantic rules ->
 * ordered events or a rejection), the system-prompt snippet, and the spec 003 compatibility mode.
 */
export { RESPOND_TOOL_NAME } from './types.js';
export type { PartCheck, RespondCall, RespondContext, RespondEvent, RespondResult, PartDelta } from './types.js';
export {
  buildRespondTool,
  respondJsonSchema,
  generateRespondSchema,
  modelEmittablePartTypes,
  RESPOND_TOOL_DESCRIPTION,
} from './schema.js';
export { createRespondParser, handoffTargets, RespondRule } from './parse.js';
export type { RespondParser, RespondParserOptions } from './parse.js';
export { respondPromptSnippet, RESPOND_PROMPT_CORE } from './prompt.js';
export { respondNotes } from './notes.js';
export type { RespondNote } from './notes.js';
export type { RespondPromptOptions } from './prompt.js';
export {
  compatTools,
  createCompatTracker,
  compatOptions,
  compatRejection,
  replayCompat,
  isCompatTool,
  COMPAT_PROMPT_SNIPPET,
  COMPAT_COMPLETION_NUDGE,
  RESPOND_TO_USER_TOOL,
  MARK_WORK_COMPLETE_TOOL,
  RESPOND_TO_USER_SUCCESS,
  RESPOND_TO_USER_TEXT_REQUIRED,
  MARK_WORK_COMPLETE_SUCCESS,
} from './compat.js';
export type { CompatCallResult, CompatOptions, CompatTracker } from './compat.js';
