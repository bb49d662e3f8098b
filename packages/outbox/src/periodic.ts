/**
 * Runs a task now and then again `intervalMs` after each run ends (never two
 * runs at once). A failed run is reported to `onError` and the next one runs
 * on time. `stop()` cancels the next run and waits for the one under way.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly task: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    if (!(intervalMs > 0)) throw new RangeError("intervalMs must be positive");
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.task()
        .then(
          () => undefined,
          (err: unknown) => {
            try {
              this.onError(err);
            } catch {
              // A failing report must not stop the runs.
            }
          },
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.intervalMs);
        });
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
