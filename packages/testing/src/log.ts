// Progress messages of the server setup. They go to stderr so that a CLI
// printing `MONGO_URL=... KAFKA_BROKERS=...` on stdout stays machine-readable,
// and so that Jest shows them before the first test result.

/** Set `EMAILSVC_TESTING_QUIET=1` to silence progress messages. */
const quiet = (): boolean => process.env.EMAILSVC_TESTING_QUIET === "1";

export function info(message: string): void {
  if (!quiet()) process.stderr.write(`[@emailsvc/testing] ${message}\n`);
}

/** Seconds with one decimal, for timings in messages. */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
