import { expect } from 'vitest';
import { RegistrationError } from '../../src/errors.js';

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
