import { SendFailure, type SendContext } from "../../src/domain/provider.js";

// What the provider tests hand a send and read from its failure.

/** A live tenant's send context with its own (or a given) abort signal. */
export const context = (signal: AbortSignal = new AbortController().signal): SendContext => ({ tenant: "acc_1:live", signal });

/** The SendFailure a send rejects with; fails the test if it succeeds or rejects with anything else. */
export async function failureOf(promise: Promise<unknown>): Promise<SendFailure> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SendFailure);
    return err as SendFailure;
  }
  throw new Error("the send succeeded");
}
