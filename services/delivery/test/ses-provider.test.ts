import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { memoryLogger } from "@emailsvc/testing";
import { SendFailure } from "../src/domain/provider";
import { parseSender, type OutgoingMessage } from "../src/domain/message";
import { SesProvider, type SesSettings } from "../src/providers/ses";

// The SES provider's failures as the real SDK reports them: a stand-in of
// SES's v2 endpoint answering each error the way SES does (status, the
// x-amzn-ErrorType header and a JSON body), read by @aws-sdk/client-sesv2 and
// classified. The happy path runs against the aws-ses-v2-local emulator
// through the platform (embedded/test/ses-delivery.test.ts).

const message: OutgoingMessage = {
  emailId: "eml_1",
  from: parseSender("Acme <orders@acme.example>"),
  to: "jane@example.org",
  subject: "Your order",
  html: "<p>Shipped</p>",
  text: "Shipped",
  messageId: "<eml_1@acme.example>",
  headers: { "Message-ID": "<eml_1@acme.example>" },
};

interface Answer {
  status: number;
  type?: string;
  message?: string;
  /** Never answer: the client must give up (its timeout) or be aborted. */
  hang?: boolean;
}

describe("SES provider against a stand-in of the SES v2 API", () => {
  let server: Server;
  let answer: Answer;
  const requests: Array<{ path: string; body: Record<string, unknown> }> = [];
  let settings: SesSettings;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        requests.push({ path: req.url ?? "", body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown> });
        if (answer.hang) return;
        if (answer.status === 200) {
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ MessageId: "0100-ses-message-id" }));
          return;
        }
        res.writeHead(answer.status, { "content-type": "application/json", "x-amzn-ErrorType": answer.type ?? "" }).end(JSON.stringify({ message: answer.message ?? "" }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    settings = {
      region: "eu-west-1",
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      configurationSet: "emailsvc-events",
      credentials: { accessKeyId: "AKIATESTONLY", secretAccessKey: "test-only-secret" },
    };
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const sendWith = async (reply: Answer, signal = new AbortController().signal): Promise<SendFailure | { response: string; providerMessageId?: string | undefined }> => {
    answer = reply;
    const provider = new SesProvider(settings, undefined, { connectionMs: 2000, requestMs: 2000 });
    try {
      return await provider.send(message, { tenant: "acc_1:live", signal });
    } catch (err) {
      if (err instanceof SendFailure) return err;
      throw err;
    } finally {
      await provider.close();
    }
  };

  it("sends the raw message once (no SDK retries), with From, Destination and the configuration set, and keeps SES's MessageId", async () => {
    requests.length = 0;
    const result = await sendWith({ status: 200 });
    expect(result).toEqual({ response: "accepted as 0100-ses-message-id", providerMessageId: "0100-ses-message-id" });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.path).toBe("/v2/email/outbound-emails");
    expect(requests[0]!.body).toMatchObject({ FromEmailAddress: "orders@acme.example", Destination: { ToAddresses: ["jane@example.org"] }, ConfigurationSetName: "emailsvc-events" });
    const raw = Buffer.from((requests[0]!.body.Content as { Raw: { Data: string } }).Raw.Data, "base64").toString("utf8");
    expect(raw).toMatch(/^Message-ID: <eml_1@acme\.example>$/m);
    expect(raw).toMatch(/^Subject: Your order$/m);
  });

  it.each<[Answer, string, string, string]>([
    [{ status: 400, type: "MessageRejected", message: "Email address is not verified: jane@example.org" }, "permanent", "message_rejected", "MessageRejected: Email address is not verified: <recipient>"],
    [{ status: 400, type: "MailFromDomainNotVerifiedException", message: "MAIL FROM domain not verified" }, "permanent", "from_domain_not_verified", "MailFromDomainNotVerifiedException: MAIL FROM domain not verified"],
    [{ status: 400, type: "BadRequestException", message: "Missing required header" }, "permanent", "message_rejected", "BadRequestException: Missing required header"],
    [{ status: 429, type: "TooManyRequestsException", message: "Maximum sending rate exceeded." }, "transient", "relay_deferred", "TooManyRequestsException: Maximum sending rate exceeded."],
    [{ status: 400, type: "SendingPausedException", message: "Sending is paused for this account." }, "transient", "relay_deferred", "SendingPausedException: Sending is paused for this account."],
    [{ status: 400, type: "AccountSuspendedException", message: "account suspended" }, "transient", "relay_deferred", "AccountSuspendedException: account suspended"],
    [{ status: 500, type: "InternalServiceErrorException", message: "internal" }, "transient", "relay_deferred", "InternalServiceErrorException: internal"],
    [{ status: 403, type: "UnrecognizedClientException", message: "The security token included in the request is invalid." }, "unreachable", "relay_unavailable", ""],
    [{ status: 404, type: "NotFoundException", message: "Configuration set does not exist." }, "unreachable", "relay_unavailable", ""],
  ])("%j is %s (%s)", async (reply, kind, code, shown) => {
    const failure = await sendWith(reply);
    expect(failure).toBeInstanceOf(SendFailure);
    expect(failure).toMatchObject({ kind, code, reply: shown });
    expect((failure as SendFailure).detail).not.toContain("jane@example.org");
  });

  it("says in an error log line, without an address, that SES refuses the account (suspended or paused)", async () => {
    const { logger, logs } = memoryLogger("delivery");
    answer = { status: 400, type: "SendingPausedException", message: "Sending is paused for jane@example.org's sender orders@acme.example" };
    const provider = new SesProvider(settings, logger);
    await expect(provider.send(message, { tenant: "acc_1:live", signal: new AbortController().signal })).rejects.toMatchObject({ kind: "transient" });
    await provider.close();
    expect(logs).toEqual([expect.objectContaining({ level: 50, provider: "ses", error: "SendingPausedException", msg: expect.stringMatching(/suspended or sending paused/) })]);
    expect(JSON.stringify(logs)).not.toMatch(/@/);
  });

  it("is unreachable when nothing listens, and aborted when the attempt's signal fires", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const nowhere = new SesProvider({ ...settings, endpoint: `http://127.0.0.1:${port}` });
    await expect(nowhere.send(message, { tenant: "acc_1:live", signal: new AbortController().signal })).rejects.toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
    await nowhere.close();

    const controller = new AbortController();
    const pending = sendWith({ status: 200, hang: true }, controller.signal);
    controller.abort();
    expect(await pending).toMatchObject({ kind: "aborted", code: "send_aborted" });
  });
});
