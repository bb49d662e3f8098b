import type { Logger } from "@emailsvc/telemetry";

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits. `stop` drains in order:
 * stop taking work (health NOT_SERVING, close listeners), finish in-flight
 * requests and consumer handlers, then close connections. A second signal, or
 * the deadline, forces exit so a stuck drain cannot block a rollout forever.
 */
export function exitOnSignal(logger: Logger, stop: () => Promise<void>, deadlineMs = 25000): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal, exiting now");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, "draining");
    const timer = setTimeout(() => {
      logger.error({ deadline_ms: deadlineMs }, "drain deadline passed, exiting");
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    stop().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, "error while draining");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
