import { expect } from 'vitest';
import { RegistrationError } from '../../src/errors.js';
import type { PartTypeMeta } from '../../src/registries/types.js';

/** Runs `fn`, which must throw a RegistrationError, and returns it for assertions on rule and message. */
export function registrationError(fn: () => unknown): RegistrationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(RegistrationError);
    return e as RegistrationError;
  }
  throw new Error('expected a RegistrationError, nothing was thrown');
}

/** A consumer part type's meta: speech for voice channels, streamed and never buffered; `over` replaces fields. */
export function audioMeta(over: Record<string, unknown> = {}): PartTypeMeta {
  return {
    description: 'Synthesised speech.',
    streamingPreferred: true,
    dataBearing: false,
    delivery: { streaming: 'deliver', buffered: 'drop' },
    inEnvelope: false,
    modelEmittable: true,
    carries: 'data',
    ...over,
  } as PartTypeMeta;
}
