import type { CallContext } from "@emailsvc/tenancy";
import type { BodyResult } from "../domain/body.js";
import type { PreviewJob, PreviewResult } from "../domain/preview.js";

// What the use cases ask of the world outside the store, as they need it.
// Adapters: compile-pool.ts (worker threads, or this thread) and rpc/clients.ts
// (the campaigns service); tests hand in their own.

/** Checks and compiles MJML bodies, and renders previews (worker threads in production). */
export interface BodyCompiler {
  /** Checks and compiles a body (on write). */
  compile(mjml: string): Promise<BodyResult>;
  /** Renders a version with the caller's variables. */
  preview(job: PreviewJob): Promise<PreviewResult>;
  close(): Promise<void>;
}

/** Something that uses a template: a trigger (active or not), or a campaign that may still send it. */
export interface TemplateUser {
  kind: "trigger" | "campaign";
  id: string;
  /** A campaign's status; a trigger's `active` or `inactive`. */
  state: string;
}

/** Who uses a template (the campaigns service, which holds triggers and campaigns). */
export interface TemplateUsers {
  /** The first users and how many there are in all; rejects (AppError `unavailable`) when that cannot be known now. */
  of(call: CallContext, templateId: string): Promise<{ users: TemplateUser[]; total: number }>;
}
