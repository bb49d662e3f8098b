import { STOP_KEY } from "./global-setup.js";

/** Jest globalTeardown: stops the servers globalSetup started and removes their temporary directories. */
export default async function globalTeardown(): Promise<void> {
  const store = globalThis as Record<symbol, unknown>;
  const stop = store[STOP_KEY] as (() => Promise<void>) | undefined;
  delete store[STOP_KEY];
  await stop?.();
}
