import type { Doc } from "@emailsvc/storage";
import type { Category, IgnorableSuppression } from "../domain/template.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index serving a request starts with it too, so no query can reach across tenants.

/**
 * A template: its current content and a pointer to its current version.
 * Content changes write a new TemplateVersionDoc first, then move the pointer
 * (`version`, `version_id`) with an update guarded by the pointer's old value.
 */
export interface TemplateDoc extends Doc {
  tenant: string;
  name: string;
  /** As shown and as used by delivery; kept after deletion. */
  slug: string;
  /**
   * The slug's claim in the unique index: the slug while the template lives;
   * `<slug>~<id>` once deleted, which frees the slug and matches no lookup.
   */
  slug_key: string;
  category: Category;
  /** The suppression-list reasons its (transactional) mail is sent despite; absent: none. */
  ignore_suppressions?: IgnorableSuppression[];
  /** Current version number (1 on create). */
  version: number;
  /** `_id` of the current version's document. */
  version_id: string;
  /** Current subject, MJML and variables (copies of the current version's). */
  subject: string;
  mjml: string;
  variables: string[];
  /** The current version's sender (copies; absent on templates stored before senders existed). */
  from_email?: string;
  from_name?: string;
  reply_to?: string;
  created_at: number;
  updated_at: number;
  /**
   * Soft delete: hidden from get, list, update, preview and slug lookup, but
   * GetCompiledTemplate by id and explicit version still serves mail queued
   * before the delete, until the purge sweep removes template and versions.
   */
  deleted: boolean;
  deleted_at: number | null;
}

/**
 * One immutable version. Its own id (`tpv_…`), not `<template>:v<n>`: a
 * version written by a writer that then lost the race (or crashed) stays
 * behind as an unreferenced document, so several documents may carry one
 * (template_id, version); the committed one is the one the template's
 * pointer named (current) or the `prev` of any document one version later.
 */
export interface TemplateVersionDoc extends Doc {
  tenant: string;
  template_id: string;
  version: number;
  /** `_id` of the committed previous version ("" for version 1). */
  prev: string;
  subject: string;
  mjml: string;
  /** MJML compiled once, on write; still holds the {{placeholders}}. */
  html: string;
  /** Variables of subject and body together. */
  variables: string[];
  /** Variables of the body alone (reused when only the subject changes). */
  body_variables: string[];
  /** The version's sender: its From address, display name and Reply-To ("" or absent: none). */
  from_email?: string;
  from_name?: string;
  reply_to?: string;
  created_at: number;
}

export const TEMPLATE_INDEXES = [
  // Create (slug uniqueness per tenant, freed on delete) and lookup by slug for sending.
  { name: "slug_per_tenant", fields: { tenant: 1, slug_key: 1 }, unique: true },
  // List live templates by id order (cursor pages).
  { name: "list_by_id", fields: { tenant: 1, deleted: 1, _id: 1 } },
  // The purge sweep: deleted templates past their retention (all tenants).
  { name: "purge_deleted", fields: { deleted: 1, deleted_at: 1 } },
] as const;

export const VERSION_INDEXES = [
  // GetCompiledTemplate by template and version; purge of a template's versions.
  { name: "versions_of_template", fields: { tenant: 1, template_id: 1, version: 1 } },
] as const;
