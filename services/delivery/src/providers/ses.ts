import type * as Sesv2 from "@aws-sdk/client-sesv2";
import { ConfigError, envOptional, type Env } from "@emailsvc/runtime";
import type { Logger } from "@emailsvc/telemetry";
import { scrubReason, type OutgoingMessage } from "../domain/message.js";
import { SendFailure, type EmailProvider, type FailureCode, type FailureKind, type SendContext, type SendResult } from "../domain/provider.js";
import { defineProvider } from "./definition.js";
import { buildRawMessage } from "./mime.js";

// Amazon SES over its v2 HTTP API (SendEmail with Content.Raw): the same raw,
// DKIM-signed bytes the SMTP provider gives a relay (./mime.ts), so what a
// recipient gets does not depend on the provider.

export interface SesSettings {
  /** SES_REGION, e.g. `eu-west-1`. */
  region: string;
  /** SES_ENDPOINT: another endpoint than AWS's (an emulator in tests, a VPC endpoint); undefined for AWS's own. */
  endpoint: string | undefined;
  /** SES_CONFIGURATION_SET: the configuration set every message is sent with (its event destinations report bounces, complaints and deliveries). */
  configurationSet: string | undefined;
  /** AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: an IAM user's key allowed `ses:SendRawEmail`. */
  credentials: { accessKeyId: string; secretAccessKey: string };
}

/** Timeouts in ms: no connection in 5 s is an unreachable endpoint; an answer may take longer. */
export interface SesTimeouts {
  connectionMs: number;
  requestMs: number;
}

export const DEFAULT_SES_TIMEOUTS: SesTimeouts = { connectionMs: 5000, requestMs: 20000 };

const REGION = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const CONFIGURATION_SET = /^[A-Za-z0-9_-]{1,64}$/;

/** The settings of `EMAIL_PROVIDER=ses`; every missing or bad one named in one ConfigError (never a key's value). */
export function parseSesSettings(env: Env): SesSettings {
  const region = envOptional("SES_REGION", env);
  const accessKeyId = envOptional("AWS_ACCESS_KEY_ID", env);
  const secretAccessKey = envOptional("AWS_SECRET_ACCESS_KEY", env);
  const missing = [
    ...(region ? [] : ["SES_REGION (e.g. eu-west-1)"]),
    ...(accessKeyId ? [] : ["AWS_ACCESS_KEY_ID"]),
    ...(secretAccessKey ? [] : ["AWS_SECRET_ACCESS_KEY"]),
  ];
  if (missing.length > 0) throw new ConfigError(`EMAIL_PROVIDER=ses needs ${missing.join(", ")}`);
  if (!REGION.test(region!)) throw new ConfigError("SES_REGION must be an AWS region name such as eu-west-1");
  const endpoint = envOptional("SES_ENDPOINT", env);
  if (endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password) {
      throw new ConfigError("SES_ENDPOINT must be an http:// or https:// URL without credentials (e.g. http://127.0.0.1:8005 for an emulator)");
    }
  }
  const configurationSet = envOptional("SES_CONFIGURATION_SET", env);
  if (configurationSet !== undefined && !CONFIGURATION_SET.test(configurationSet)) {
    throw new ConfigError("SES_CONFIGURATION_SET must be 1-64 letters, digits, _ or -");
  }
  return { region: region!, endpoint, configurationSet, credentials: { accessKeyId: accessKeyId!, secretAccessKey: secretAccessKey! } };
}

/** Where it sends, for the start log: region, endpoint and configuration set; never the keys. */
export function describeSes(settings: SesSettings): string {
  const where = settings.endpoint ? `${settings.endpoint} (${settings.region})` : settings.region;
  return `ses ${where}${settings.configurationSet ? ` configuration set ${settings.configurationSet}` : ""}`;
}

/** The part of an SDK error this provider reads (a service exception, or a network error with no answer). */
export interface SesErrorLike {
  name?: string;
  message?: string;
  code?: string;
  $fault?: "client" | "server";
  $metadata?: { httpStatusCode?: number | undefined };
}

/** Our keys or the account: not this message's fault, and not for a client to read. */
const CREDENTIALS_REFUSED = new Set(["UnrecognizedClientException", "InvalidClientTokenId", "InvalidSignatureException", "SignatureDoesNotMatch", "AccessDeniedException", "ExpiredTokenException"]);
/** SES says "not now". */
const THROTTLED = new Set(["TooManyRequestsException", "LimitExceededException", "ThrottlingException", "Throttling"]);
/** The account may not send at the moment: transient, with a log line saying why (an operator must act). */
const ACCOUNT_BLOCKED = new Set(["AccountSuspendedException", "SendingPausedException"]);
/** SES refused this message for good. */
const REJECTED = new Set(["MessageRejected", "BadRequestException"]);

/**
 * What an SES failure means for the email, as classifySmtpError does for a
 * relay: throttling, 5xx and an answer timed out are transient (retried,
 * counted); no answer at all or our credentials refused are unreachable;
 * MessageRejected and other 4xx permanent (`message_rejected`),
 * MailFromDomainNotVerified permanent `from_domain_not_verified`, each with
 * SES's message (addresses removed) as the reply; our abort aborted.
 */
export function classifySesError(err: SesErrorLike, recipient: string, signal?: AbortSignal): SendFailure {
  const name = err.name ?? "Error";
  const message = scrubReason(err.message ?? "", recipient);
  const status = err.$metadata?.httpStatusCode;
  const detail = scrubReason(`${name}${status ? ` (${status})` : ""}${message ? `: ${message}` : ""}`, recipient);
  const failure = (kind: FailureKind, code: FailureCode, reply = "") => new SendFailure(kind, code, { reply, detail });
  if (signal?.aborted || name === "AbortError") return failure("aborted", "send_aborted");
  if (CREDENTIALS_REFUSED.has(name) || status === 401 || status === 403) return failure("unreachable", "relay_unavailable");
  if (THROTTLED.has(name) || ACCOUNT_BLOCKED.has(name) || status === 429) return failure("transient", "relay_deferred", message ? `${name}: ${message}` : name);
  // The sending side's domain is not verified with SES: about the sender, never the recipient's address
  // (so not a bounce), and what the account's sending domains are for.
  if (name === "MailFromDomainNotVerifiedException") return failure("permanent", "from_domain_not_verified", message ? `${name}: ${message}` : name);
  if (REJECTED.has(name)) return failure("permanent", "message_rejected", message ? `${name}: ${message}` : name);
  if (status === undefined) {
    // No answer to a request sent: SES may have taken the message, so it counts like an SMTP reply timeout.
    if (name === "TimeoutError" || err.code === "ETIMEDOUT" || err.code === "ECONNRESET") return failure("transient", "relay_deferred");
    return failure("unreachable", "relay_unavailable");
  }
  if (err.$fault === "server" || status >= 500) return failure("transient", "relay_deferred", message ? `${name}: ${message}` : name);
  // Any other refusal of the request (NotFound for a configuration set that does not exist, say): a setting to fix, not the message.
  if (name === "NotFoundException") return failure("unreachable", "relay_unavailable");
  return failure("permanent", "message_rejected", message ? `${name}: ${message}` : name);
}

/**
 * Sends through Amazon SES's v2 API: one SendEmail per message, raw MIME
 * (ours, signed), the envelope From and the one recipient, and the
 * configuration set when there is one. The SDK does not retry: delivery's
 * retry rules (and the attempt's lease) are the only ones.
 */
/**
 * The AWS SDK's SES v2 client, loaded when an SES provider is made: a few MB
 * of heap and code that a platform sending through SMTP or the sandbox (and
 * every thread that reads delivery's settings) need not hold.
 */
function sesv2(): typeof Sesv2 {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (above)
  return require("@aws-sdk/client-sesv2") as typeof Sesv2;
}

export class SesProvider implements EmailProvider {
  readonly name = "ses" as const;
  private readonly client: Sesv2.SESv2Client;
  private readonly sdk = sesv2();

  constructor(
    private readonly settings: SesSettings,
    private readonly logger?: Logger,
    timeouts: SesTimeouts = DEFAULT_SES_TIMEOUTS,
  ) {
    this.client = new this.sdk.SESv2Client({
      region: settings.region,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      credentials: settings.credentials,
      maxAttempts: 1,
      requestHandler: { connectionTimeout: timeouts.connectionMs, requestTimeout: timeouts.requestMs },
      // The SDK's own logger stays off: it would log requests.
      logger: undefined,
    });
  }

  async send(message: OutgoingMessage, context: SendContext): Promise<SendResult> {
    let raw: Buffer;
    try {
      raw = await buildRawMessage(message);
    } catch (err) {
      // As with SMTP (where the same build fails inside the send): retried, counted toward the attempt cap.
      throw new SendFailure("transient", "relay_deferred", { detail: scrubReason(`the message could not be built or signed: ${(err as Error).message}`, message.to) });
    }
    try {
      const answer = await this.client.send(
        new this.sdk.SendEmailCommand({
          FromEmailAddress: message.from.address,
          Destination: { ToAddresses: [message.to] },
          Content: { Raw: { Data: raw } },
          ...(this.settings.configurationSet ? { ConfigurationSetName: this.settings.configurationSet } : {}),
        }),
        { abortSignal: context.signal },
      );
      return { response: `accepted as ${answer.MessageId ?? "?"}`, providerMessageId: answer.MessageId };
    } catch (err) {
      const failure = classifySesError(err as SesErrorLike, message.to, context.signal);
      if (ACCOUNT_BLOCKED.has((err as SesErrorLike).name ?? "")) {
        // No address here: the name says what an operator must look at in the SES console.
        this.logger?.error({ provider: "ses", error: (err as SesErrorLike).name }, "SES refuses to send for this AWS account (suspended or sending paused): mail is retried until it is lifted");
      }
      throw failure;
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/**
 * In the registry: `EMAIL_PROVIDER=ses` with SES_REGION, AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (required), SES_ENDPOINT and SES_CONFIGURATION_SET
 * (optional), read at start.
 */
export const sesProvider = defineProvider({
  name: "ses",
  settings: parseSesSettings,
  describe: describeSes,
  build: (settings, context) => new SesProvider(settings, context.logger),
  threadable: true,
});
