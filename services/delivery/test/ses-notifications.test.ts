import { Code } from "@connectrpc/connect";
import { DeliveryProblem, delivery } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { snsTestSigner, startSesEmulator, type SesEmulator, type SnsTestSigner } from "@emailsvc/testing";
import { loadProviders } from "../src/providers/registry.js";
import { announcedStatuses, as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// SES's notifications taken in over gRPC (TakeProviderNotification, as the
// gateway forwards SNS's post): live mail sent through a local SES
// (aws-ses-v2-local), which answers its MessageId; then SNS messages about
// it, signed with a key of our own whose certificate the service fetches
// through the injected fetcher, as it would from SNS. Bounce, complaint and
// delivery move the email (status, history, the email.status event, the
// subscribers service told); redeliveries, forgeries and unknown topics
// change nothing.

const TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-events";
const OTHER_TOPIC = "arn:aws:sns:eu-west-1:123456789012:someone-else";
const WELCOME = { slug: "welcome", subject: "Hello", html: "<p>Hello</p>" };

async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    return readError(err);
  }
  throw new Error("expected the call to fail");
}

const sesEvent = (type: "Bounce" | "Complaint" | "Delivery", messageId: string, to: string, extra: object) => ({
  eventType: type,
  mail: { timestamp: new Date().toISOString(), source: "billing@acme.example", messageId, destination: [to] },
  ...extra,
});
const bounceOf = (messageId: string, to: string, bounceType: "Permanent" | "Transient", recipient = to) =>
  sesEvent("Bounce", messageId, to, {
    bounce: {
      bounceType,
      bounceSubType: bounceType === "Permanent" ? "General" : "MailboxFull",
      bouncedRecipients: [
        { emailAddress: recipient, action: "failed", status: bounceType === "Permanent" ? "5.1.1" : "4.2.2", diagnosticCode: `smtp; ${bounceType === "Permanent" ? "550 5.1.1" : "452 4.2.2"} <${recipient}>: no` },
      ],
    },
  });
const complaintOf = (messageId: string, to: string) => sesEvent("Complaint", messageId, to, { complaint: { complainedRecipients: [{ emailAddress: to }], complaintFeedbackType: "abuse" } });
const deliveryOf = (messageId: string, to: string) => sesEvent("Delivery", messageId, to, { delivery: { recipients: [to], smtpResponse: "250 2.0.0 OK" } });

describe.each<StoreKind>(["embedded", "mongodb"])("SES notifications over gRPC on %s storage", (kind) => {
  let h: Harness;
  let ses: SesEmulator;
  let sns: SnsTestSigner;

  beforeAll(async () => {
    ses = await startSesEmulator();
    sns = snsTestSigner();
    h = await startHarness({
      store: kind,
      providers: loadProviders({ EMAIL_PROVIDER: "ses", SES_REGION: "eu-west-1", SES_ENDPOINT: ses.endpoint, AWS_ACCESS_KEY_ID: "AKIATESTONLY", AWS_SECRET_ACCESS_KEY: "test-only-secret" }),
      from: "Acme Billing <billing@acme.example>",
      sesNotifications: { topics: [TOPIC], fetchCertificate: (url) => sns.fetch(url) },
    });
  });
  afterAll(async () => {
    await h?.close();
    await ses?.close();
    sns?.close();
  });

  const take = (message: object) => h.client.takeProviderNotification({ provider: "ses", body: new TextEncoder().encode(JSON.stringify(message)) });
  const getEmail = async (t: CallContext, id: string) => (await h.client.getEmail({ id }, as(t))).email!;

  async function sent(t: CallContext, to: string) {
    const { email } = await h.client.sendEmail({ templateSlug: "welcome", to }, as(t));
    const got = await waitFor(async () => {
      const e = await getEmail(t, email!.id);
      return e.status === delivery.EmailStatus.SENT ? e : undefined;
    }, `email ${email!.id} sent`);
    expect(got.providerMessageId).not.toBe("");
    return got;
  }

  it("applies a delivery, then a complaint: the status and its history, the events, the subscribers service told; redelivered, nothing changes", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const email = await sent(t, "Reader@Example.com");
    const delivered = sns.notification(TOPIC, deliveryOf(email.providerMessageId, "reader@example.com"));
    expect((await take(delivered)).outcome).toBe(delivery.ProviderNotificationOutcome.APPLIED);
    expect((await take(delivered)).outcome).toBe(delivery.ProviderNotificationOutcome.UNCHANGED);
    const afterDelivery = await getEmail(t, email.id);
    expect(afterDelivery.status).toBe(delivery.EmailStatus.DELIVERED);
    expect(afterDelivery.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT, delivery.EmailStatus.DELIVERED]);
    await waitFor(() => announcedStatuses(h, email.id).includes("delivered") || undefined, "email.status delivered");

    const complaint = sns.notification(TOPIC, complaintOf(email.providerMessageId, "reader@example.com"));
    expect((await take(complaint)).outcome).toBe(delivery.ProviderNotificationOutcome.APPLIED);
    expect((await take(complaint)).outcome).toBe(delivery.ProviderNotificationOutcome.UNCHANGED);
    // A delivery reported late (SNS keeps no order) does not undo the complaint.
    expect((await take(sns.notification(TOPIC, deliveryOf(email.providerMessageId, "reader@example.com")))).outcome).toBe(delivery.ProviderNotificationOutcome.UNCHANGED);
    const afterComplaint = await getEmail(t, email.id);
    expect(afterComplaint.status).toBe(delivery.EmailStatus.COMPLAINED);
    expect(afterComplaint.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT, delivery.EmailStatus.DELIVERED, delivery.EmailStatus.COMPLAINED]);
    await waitFor(() => h.subscribers.problems.find((p) => p.emailId === email.id), "complaint reported");
    expect(h.subscribers.problems.filter((p) => p.emailId === email.id)).toEqual([
      { tenant: tenantKey(t.tenant), email: "Reader@Example.com", problem: DeliveryProblem.COMPLAINT, emailId: email.id },
    ]);
  });

  it("bounces hard on a Permanent bounce and soft on a Transient one, counting only the email's own recipient", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const gone = await sent(t, "gone@example.com");
    // Another recipient named in the notification (a message of another platform on the same id) is not ours.
    expect((await take(sns.notification(TOPIC, bounceOf(gone.providerMessageId, "gone@example.com", "Permanent", "someone@example.com")))).outcome).toBe(
      delivery.ProviderNotificationOutcome.IGNORED,
    );
    expect((await getEmail(t, gone.id)).status).toBe(delivery.EmailStatus.SENT);
    const hard = sns.notification(TOPIC, bounceOf(gone.providerMessageId, "gone@example.com", "Permanent"));
    expect((await take(hard)).outcome).toBe(delivery.ProviderNotificationOutcome.APPLIED);
    expect((await take(hard)).outcome).toBe(delivery.ProviderNotificationOutcome.UNCHANGED);
    const bounced = await getEmail(t, gone.id);
    expect(bounced).toMatchObject({ status: delivery.EmailStatus.BOUNCED, bounce: { type: delivery.BounceType.HARD, diagnostic: "550 5.1.1 <recipient>: no" } });
    expect(bounced.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT, delivery.EmailStatus.BOUNCED]);
    await waitFor(() => h.subscribers.problems.find((p) => p.emailId === gone.id), "hard bounce reported");
    expect(h.subscribers.problems.filter((p) => p.emailId === gone.id).map((p) => p.problem)).toEqual([DeliveryProblem.HARD_BOUNCE]);

    const full = await sent(t, "full@example.com");
    expect((await take(sns.notification(TOPIC, bounceOf(full.providerMessageId, "full@example.com", "Transient")))).outcome).toBe(delivery.ProviderNotificationOutcome.APPLIED);
    expect((await getEmail(t, full.id)).bounce).toMatchObject({ type: delivery.BounceType.SOFT });
    await waitFor(() => h.subscribers.problems.find((p) => p.emailId === full.id), "soft bounce reported");
    expect(h.subscribers.problems.filter((p) => p.emailId === full.id).map((p) => p.problem)).toEqual([DeliveryProblem.SOFT_BOUNCE]);
  });

  it("refuses a forged message, an unknown topic and a malformed body, and changes nothing", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const email = await sent(t, "kept@example.com");
    const forged = await failure(take(sns.notification(TOPIC, bounceOf(email.providerMessageId, "kept@example.com", "Permanent"), { forged: true })));
    expect(forged).toMatchObject({ code: Code.PermissionDenied, errorCode: "sns_signature_invalid" });
    // Signed, but its Message changed after signing.
    const altered = { ...sns.notification(TOPIC, deliveryOf(email.providerMessageId, "kept@example.com")), Message: JSON.stringify(bounceOf(email.providerMessageId, "kept@example.com", "Permanent")) };
    expect(await failure(take(altered))).toMatchObject({ code: Code.PermissionDenied, errorCode: "sns_signature_invalid" });
    expect(await failure(take(sns.notification(OTHER_TOPIC, bounceOf(email.providerMessageId, "kept@example.com", "Permanent"))))).toMatchObject({
      code: Code.PermissionDenied,
      errorCode: "sns_topic_not_allowed",
    });
    expect(await failure(h.client.takeProviderNotification({ provider: "ses", body: new TextEncoder().encode("{not json") }))).toMatchObject({
      code: Code.InvalidArgument,
      errorCode: "sns_message_malformed",
    });
    const still = await getEmail(t, email.id);
    expect(still.status).toBe(delivery.EmailStatus.SENT);
    expect(still.history).toHaveLength(2);
    expect(h.subscribers.problems.filter((p) => p.emailId === email.id)).toEqual([]);
  });

  it("confirms a subscription by visiting its SubscribeURL, and only an SNS one", async () => {
    const subscribeUrl = "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + encodeURIComponent(TOPIC) + "&Token=2336412f37";
    const confirmation = (url: string) =>
      sns.sign({ Type: "SubscriptionConfirmation", MessageId: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b", Token: "2336412f37", TopicArn: TOPIC, Message: "You have chosen to subscribe.", SubscribeURL: url, Timestamp: new Date().toISOString() });
    expect((await take(confirmation(subscribeUrl))).outcome).toBe(delivery.ProviderNotificationOutcome.SUBSCRIPTION_CONFIRMED);
    expect(sns.visited).toContain(subscribeUrl);
    const visits = sns.visited.length;
    expect(await failure(take(confirmation("https://attacker.example/?Action=ConfirmSubscription")))).toMatchObject({ code: Code.InvalidArgument, errorCode: "sns_message_malformed" });
    expect(sns.visited).toHaveLength(visits);
  });
});

describe("SES notifications when no topic is configured", () => {
  it("are refused as disabled", async () => {
    const h = await startHarness({});
    try {
      const sns = snsTestSigner();
      const refused = await failure(h.client.takeProviderNotification({ provider: "ses", body: new TextEncoder().encode(JSON.stringify(sns.notification(TOPIC, {}))) }));
      sns.close();
      expect(refused).toMatchObject({ code: Code.NotFound, errorCode: "provider_notifications_disabled" });
    } finally {
      await h.close();
    }
  });
});
