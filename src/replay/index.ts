/**
 * Replay and diff of recorded sessions: re-run a session from its log with the recorded model
 * outputs and tool results (nothing is called), or against a new script or model, and compare
 * the paths through turn states, part types and tools.
 */
export { extractPath, formatPath, partText, type PathStep, type SessionPath, type TurnPath } from './path.js';
export { diffSessions, formatDiff, type Divergence, type DivergenceField, type PathDiff } from './diff.js';
export { replaySession, replayWithScript, type ReplayOptions, type ReplayResult } from './replay.js';
export { createRecordedModel, readRecording, ReplayError, type RecordedModel, type Recording } from './recording.js';
export { inferSetup } from './infer.js';
export { inferReasoningTraces, WITHHELD_THINKING, type ReplayReasoningTraces } from './options.js';
