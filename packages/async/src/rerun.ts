/**
 * A piece of background work that is run on demand, one run at a time: a
 * `kick()` while a run is in progress asks for one more run right after it
 * (however many kicks came), so work that arrived meanwhile is never left
 * waiting for the next timer. Errors of a run go to `onError`; the next kick
 * runs again. The campaigns service's trigger firer and dispatcher use it.
 */
export class Rerunner {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    /** One run; resolves when the work found now is done. */
    private readonly run: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Runs now, or once more right after the run in progress. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.run();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.onError(err);
      } finally {
        this.running = undefined;
      }
    })();
  }

  /** No more runs; resolves once the one in progress ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}
