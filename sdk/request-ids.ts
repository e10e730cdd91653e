/**
 * The ids an agent chooses for its requests, the same on every retry of one request, so that the server knows a
 * retry from a new request: a claim's id, and a session open's id and number.
 */

/** A claim id: letters, digits and "-", as the server accepts (8 to 64 characters). */
export const newClaimId = (): string => globalThis.crypto.randomUUID();

/** A new open id: one per open, sent again on each of its retries. */
export const newOpenId = (): string => globalThis.crypto.randomUUID();

let lastOpenSeq = 0;
/**
 * A number for a new open, above every earlier one of this process and, being the clock in ms, above those of the
 * process this one restarted (see `OpenSessionOptions.openSeq`).
 */
export const nextOpenSeq = (): number => {
  lastOpenSeq = Math.max(Date.now(), lastOpenSeq + 1);
  return lastOpenSeq;
};
