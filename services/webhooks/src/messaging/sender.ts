import { Rerunner } from "@emailsvc/async";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { DeliveryDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { sendDue, type SendingDeps } from "../usecases/send-due.js";

/**
 * The sender loop: attempts due deliveries at once when new ones are
 * recorded or replayed (kick), and on a timer for retries and for what a
 * crash left (deliveries are stored, so a restart resumes them).
 */
export class WebhookSender {
  private timer: NodeJS.Timeout | undefined;
  private readonly runner = new Rerunner(
    async () => {
      while (!this.runner.isStopped && (await sendDue(this.deps, this.due, (t) => this.tenants.forTenant(t))) >= 100);
    },
    (err) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "webhook sender failed; retrying on its timer"),
  );

  constructor(
    private readonly deps: SendingDeps,
    private readonly due: CrossTenantCollection<DeliveryDoc>,
    private readonly tenants: { forTenant(tenant: string): TenantRepositories },
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    this.timer.unref();
    this.kick();
  }

  kick(): void {
    this.runner.kick();
  }

  /** Stops; an attempt in flight finishes (or is left to its lease). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.runner.stop();
  }
}
