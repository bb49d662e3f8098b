import type { PostOutcome } from "../http/post.js";

/** Makes one signed request to an endpoint's URL (http/post.ts, checked against the address policy). */
export type WebhookPoster = (url: string, headers: Record<string, string>, body: string) => Promise<PostOutcome>;
