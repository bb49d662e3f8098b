import type { PostOutcome } from "../http/post.js";

/** Makes one signed request to an endpoint's URL (http/post.ts, checked against the address policy). */
export type WebhookPoster = (url: string, headers: Record<string, string>, body: string) => Promise<PostOutcome>;

/**
 * The recipient's address of an email, asked of delivery when an email event
 * is sent (rpc/clients.ts): the webhooks service never stores it. null: none
 * (the email is unknown, or scrubbed by an erasure). Throws when delivery
 * cannot answer now (the attempt waits).
 */
export type RecipientLookup = (tenant: string, emailId: string) => Promise<string | null>;
