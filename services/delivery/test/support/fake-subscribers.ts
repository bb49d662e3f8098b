import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AudienceService, DeliveryProblem, MailabilitySchema, MailingBlock, RecipientSchema, SuppressionService, type Mailability } from "@emailsvc/proto";
import { startGrpcServer, type RunningGrpcServer } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { readCallContext, tenantKey, type CallContext } from "@emailsvc/tenancy";

// A fake of the subscribers service's AudienceService (where delivery looks
// recipients up), served over real gRPC so that the tenant headers delivery
// sends are read as the real service reads them. GetRecipientByEmail,
// GetRecipientsByEmail and GetRecipients answer what a test put: subscribers with a mailability of the
// test's choosing (default: anything may be sent), and suppressed addresses.

interface FakeSubscriber {
  id: string;
  email: string;
  metadata: JsonObject;
  mailability: Mailability;
}

/** May get anything. */
const MAILABLE = (): Mailability => create(MailabilitySchema, {});

export class FakeSubscribers {
  private server: RunningGrpcServer | undefined;
  /** tenant -> lower-cased address -> subscriber */
  private readonly byTenant = new Map<string, Map<string, FakeSubscriber>>();
  /** tenant -> lower-cased addresses suppressed (no subscriber) */
  private readonly suppressed = new Map<string, Set<string>>();
  /** Every lookup by address: tenant and address. */
  readonly lookups: { tenant: string; email: string }[] = [];
  /** Lookups of these addresses (lower case) after their first one fail with UNAVAILABLE: queued at once, never sendable. */
  readonly unavailableAfterFirst = new Set<string>();
  /** Every bounce or complaint delivery reported (SuppressionService.RecordDeliveryProblem), with its tenant. */
  readonly problems: { tenant: string; email: string; problem: DeliveryProblem; emailId: string }[] = [];
  /** The first lookup of these addresses (lower case) answers after 1.5 s: later than SendEmail waits, so only the send attempt hears it. */
  readonly slowFirst = new Set<string>();

  get url(): string {
    return this.server!.url;
  }

  async start(): Promise<this> {
    this.server = await startGrpcServer({
      port: 0,
      routes: (router) => {
        router.service(SuppressionService, {
          recordDeliveryProblem: async (req, ctx) => {
            this.problems.push({ tenant: tenantKey(readCallContext(ctx).tenant), email: req.email, problem: req.problem, emailId: req.emailId });
            return { suppressed: req.problem !== DeliveryProblem.SOFT_BOUNCE, subscriberId: "" };
          },
        });
        router.service(AudienceService, {
          getRecipientByEmail: async (req, ctx) => {
            const tenant = tenantKey(readCallContext(ctx).tenant);
            const key = req.email.trim().toLowerCase();
            await this.looked(tenant, [key]);
            return this.answer(tenant, key);
          },
          // Many addresses: each counted and answered as GetRecipientByEmail does; one down or slow makes the call so.
          getRecipientsByEmail: async (req, ctx) => {
            const tenant = tenantKey(readCallContext(ctx).tenant);
            const keys = req.emails.map((email) => email.trim().toLowerCase());
            await this.looked(tenant, keys);
            return { answers: keys.map((key) => this.answer(tenant, key)) };
          },
          getRecipients: async (req, ctx) => {
            const subscribers = [...(this.byTenant.get(tenantKey(readCallContext(ctx).tenant))?.values() ?? [])];
            return { recipients: req.subscriberIds.flatMap((id) => subscribers.filter((s) => s.id === id).map(recipientOf)) };
          },
        });
      },
    });
    return this;
  }

  /** Records lookups of `keys`; fails or waits as the test asked for them. */
  private async looked(tenant: string, keys: readonly string[]): Promise<void> {
    let slow = false;
    let down = false;
    for (const key of keys) {
      const earlier = this.lookups.filter((l) => l.tenant === tenant && l.email === key).length;
      this.lookups.push({ tenant, email: key });
      if (earlier > 0 && this.unavailableAfterFirst.has(key)) down = true;
      if (earlier === 0 && this.slowFirst.has(key)) slow = true;
    }
    if (down) throw new ConnectError("down on purpose", Code.Unavailable);
    if (slow) await new Promise((resolve) => setTimeout(resolve, 1500));
  }

  private answer(tenant: string, key: string) {
    const found = this.byTenant.get(tenant)?.get(key);
    if (found) return { recipient: recipientOf(found), mailability: found.mailability };
    const suppressed = this.suppressed.get(tenant)?.has(key);
    return { mailability: suppressed ? create(MailabilitySchema, { marketing: MailingBlock.SUPPRESSED }) : MAILABLE() };
  }

  async close(): Promise<void> {
    await this.server?.close(0);
  }

  /**
   * Makes `email` a subscriber of the caller's tenant; returns its id (`id`
   * given: that one, e.g. the same id in two tenants). `mailability`: what the
   * subscribers service would say of them (default: they may get anything).
   */
  put(call: CallContext, email: string, metadata: JsonObject = {}, id = newId("sub"), mailability: Partial<Pick<Mailability, "marketing" | "transactional">> = {}): string {
    const tenant = tenantKey(call.tenant);
    const map = this.byTenant.get(tenant) ?? new Map();
    map.set(email.toLowerCase(), { id, email, metadata, mailability: create(MailabilitySchema, mailability) });
    this.byTenant.set(tenant, map);
    return id;
  }

  /** Deletes the subscriber (as the real service does before it publishes subscriber.deleted); `suppress`: its address stays suppressed. */
  remove(call: CallContext, email: string, options: { suppress?: boolean } = {}): void {
    const tenant = tenantKey(call.tenant);
    this.byTenant.get(tenant)?.delete(email.toLowerCase());
    if (options.suppress) this.suppressed.set(tenant, (this.suppressed.get(tenant) ?? new Set()).add(email.toLowerCase()));
  }
}

function recipientOf(s: FakeSubscriber) {
  return create(RecipientSchema, { subscriberId: s.id, email: s.email, metadata: s.metadata, mailability: s.mailability });
}
