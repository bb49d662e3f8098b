import type { ServiceManifest } from "./types.js";

// Every deployable of the platform, one entry each: the one place that says
// what a service listens on, whom it calls, which topics it produces and
// consumes, which secrets it reads and what data it owns. Derived from it:
// the catalog of gRPC services and their `<NAME>_URL` settings
// (packages/runtime), each service's module (packages/service, defineService),
// the embedded launcher's start order, the Helm chart's `components:`
// (npm run generate:chart; a test fails when the chart is stale), its
// NetworkPolicy callers, and scripts/helm-check.sh. Adding a service is its
// folder plus an entry here: ARCHITECTURE.md, "Adding a service".
//
// The name of an entry is the service's one name: folder services/<name>,
// package @emailsvc/<name>, database, consumer group, log field, Helm component.

export const SERVICES = {
  gateway: {
    summary: "REST API (/api/v1, /admin/v1) translated to gRPC calls; the OpenAPI document; accounts and API keys.",
    metricsPort: 9460,
    public: {
      http: { port: 8080, portEnv: "GATEWAY_PORT", hostEnv: "GATEWAY_HOST", health: { live: "/healthz", ready: "/readyz" } },
    },
    calls: {
      subscribers: { need: "required", for: "subscribers, tags, audiences" },
      templates: { need: "optional", for: "templates and previews" },
      delivery: { need: "optional", for: "sends, email records and sending domains" },
      campaigns: { need: "optional", for: "campaigns and triggers" },
      portal: { need: "optional", for: "the preference-center API, portal settings, custom domains, signup forms" },
      webhooks: { need: "optional", for: "webhook endpoints, their delivery logs and replays" },
    },
    topics: { produces: [], consumes: [] },
    secrets: ["ADMIN_TOKEN", "MONGO_URL", "TOKEN_SIGNING_KEYS"],
    optionalSecrets: {},
    data: {
      // rate_limits: the shared counters of RATE_LIMIT_STORE=mongo; members to audit_log: the dashboard's people (src/members).
      collections: ["accounts", "api_keys", "settings", "rate_limits", "members", "sessions", "invitations", "password_resets", "audit_log", "passkeys", "passkey_challenges"],
      dataDir: ["gateway/", "secrets/token-signing-keys"],
    },
  },
  subscribers: {
    summary: "SubscriberService, TagService and AudienceService: subscribers, tags, audit trail, suppression; produces subscriber.* events.",
    grpcPort: 50051,
    metricsPort: 9461,
    public: {},
    calls: {
      // Optional both: delivery and templates call subscribers as required, so these edges must not hold their starts.
      delivery: { need: "optional", for: "double opt-in confirmation mail (without it none is sent)" },
      templates: { need: "optional", for: "the platform's confirmation template, made in an account on its first confirmation mail" },
    },
    topics: {
      produces: ["subscriber.created", "subscriber.status_changed", "subscriber.tag_added", "subscriber.tag_removed", "subscriber.deleted"],
      consumes: [],
    },
    secrets: ["MONGO_URL", "SUPPRESSION_KEYS"],
    optionalSecrets: {},
    data: {
      // imports, import_chunks (an upload's chunks on MongoDB), import_errors: bulk imports.
      collections: ["subscribers", "tags", "subscriber_events", "suppressions", "soft_bounces", "privacy_requests", "audience_settings", "imports", "import_chunks", "import_errors"],
      // imports/: an upload's chunks on the embedded store, until its job is done.
      dataDir: ["subscribers/", "bus/subscribers/", "secrets/suppression-keys", "imports/"],
    },
  },
  templates: {
    summary: "TemplateService: MJML templates, their immutable compiled versions, previews, the compiled template for delivery.",
    grpcPort: 50052,
    metricsPort: 9462,
    public: {},
    calls: {
      // Optional: campaigns calls templates as required, so this edge must not hold templates' start.
      campaigns: { need: "optional", for: "who uses a template, before it is deleted (without it a delete answers 503 campaigns_unavailable)" },
    },
    topics: { produces: [], consumes: [] },
    secrets: ["MONGO_URL"],
    optionalSecrets: {},
    data: { collections: ["templates", "template_versions"], dataDir: ["templates/"] },
  },
  delivery: {
    summary: "DeliveryService and SenderDomainService: email records with idempotency keys, rendering, sending domains with their DKIM keys, signing, and the hand-off to a provider (SMTP or the sandbox).",
    grpcPort: 50053,
    metricsPort: 9463,
    public: {},
    calls: {
      templates: { need: "required", for: "compiled template versions" },
      // Required: it says who may be mailed (suppression, unsubscribes, bounces); without it mail would go to anyone.
      subscribers: { need: "required", for: "who may be mailed, the recipient's metadata.* and language, and the subscriber an erasure follows" },
      // Optional: the portal calls delivery as required, so this edge must not hold delivery's start.
      portal: { need: "optional", for: "the account's custom domain for preference links in mail" },
    },
    topics: {
      // email.send.requested: its own queue (and campaigns' hand-over); subscriber.deleted: erasure;
      // campaign.status_changed: a cancelled campaign's queued mail is not sent.
      produces: ["email.send.requested", "email.status"],
      consumes: ["email.send.requested", "subscriber.deleted", "campaign.status_changed"],
    },
    // SEALING_KEYS: seals the sending domains' DKIM private keys at rest (@emailsvc/tokens, seal).
    secrets: ["MONGO_URL", "TOKEN_SIGNING_KEYS", "SEALING_KEYS"],
    // DKIM_PLATFORM_KEY: the platform's own DKIM key, signing mail From EMAIL_FROM (with DKIM_PLATFORM_SELECTOR).
    optionalSecrets: { DKIM_PLATFORM_KEY: "DKIM_PLATFORM_SELECTOR set" },
    // The mail providers of its registry (services/delivery/src/providers/registry.ts, keyed by these
    // names): adding one is its file, its entry here and in PROVIDERS (services/delivery/README.md).
    providers: {
      setting: "EMAIL_PROVIDER",
      default: "sandbox",
      options: {
        sandbox: { summary: "keeps live-mode mail in delivery's store and sends nothing (test-mode mail always goes here)", secrets: {} },
        smtp: { summary: "sends through any SMTP relay", secrets: { SMTP_URL: "the relay, smtp://user:pass@host:587 or smtps://...:465" } },
        ses: {
          summary: "sends through Amazon SES's v2 API (SES_REGION; SES_ENDPOINT, SES_CONFIGURATION_SET optional; SES_NOTIFICATION_TOPIC_ARNS: its SNS notifications taken)",
          secrets: { AWS_ACCESS_KEY_ID: "an IAM access key id allowed ses:SendRawEmail", AWS_SECRET_ACCESS_KEY: "that access key's secret" },
        },
      },
    },
    data: {
      collections: ["emails", "sandbox_messages", "cancelled_campaigns", "paused_campaigns", "test_mode_quota", "sender_domains"],
      // sandbox/: the bodies of sandboxed messages on the embedded store (not held in memory).
      dataDir: ["delivery/", "bus/delivery/", "sandbox/", "secrets/token-signing-keys", "secrets/sealing-keys"],
    },
  },
  campaigns: {
    summary: "CampaignService and TriggerService: drafts, audiences, the per-recipient ledger and its sending; triggers.",
    grpcPort: 50054,
    metricsPort: 9465,
    public: {},
    calls: {
      subscribers: { need: "required", for: "audiences, and whom a trigger mails" },
      templates: { need: "required", for: "the template a campaign sends" },
      delivery: { need: "required", for: "the sends" },
    },
    topics: {
      produces: ["email.send.requested", "campaign.status_changed"],
      consumes: ["subscriber.created", "subscriber.tag_added", "subscriber.tag_removed", "subscriber.status_changed", "subscriber.deleted", "email.status"],
    },
    secrets: ["MONGO_URL"],
    optionalSecrets: {},
    data: {
      // campaign_send_rates: the counters of CAMPAIGN_RATE, CAMPAIGN_DAILY_LIMIT and TEST_MODE_DAILY_LIMIT.
      collections: ["campaigns", "campaign_recipients", "triggers", "trigger_fires", "campaign_send_rates"],
      dataDir: ["campaigns/", "bus/campaigns/"],
    },
  },
  portal: {
    summary: "The preference page (PORTAL_PORT) and the public signup forms' posts, PreferenceCenterService, PortalSettingsService, DomainService (custom domains) and FormService (signup forms).",
    grpcPort: 50055,
    metricsPort: 9466,
    public: {
      http: { port: 8081, portEnv: "PORTAL_PORT", hostEnv: "PORTAL_HOST" },
    },
    calls: {
      subscribers: { need: "required", for: "the subscriber, their tags, changes and erasure; signups from forms" },
      delivery: { need: "required", for: "its part of an export, and mailing a fresh link" },
      campaigns: { need: "required", for: "its part of an export" },
      templates: { need: "required", for: "the template a fresh link is mailed with" },
    },
    topics: { produces: [], consumes: [] },
    secrets: ["MONGO_URL", "TOKEN_SIGNING_KEYS"],
    optionalSecrets: {},
    data: {
      // custom_domain_budget: the counters of CUSTOM_DOMAIN_ISSUE_RATE; rate_limits: the
      // preference budgets' counters with RATE_LIMIT_STORE=mongo; signup_challenges: proofs of work used (until they expire).
      collections: ["portal_settings", "custom_domains", "custom_domain_removals", "custom_domain_budget", "rate_limits", "signup_forms", "signup_challenges"],
      dataDir: ["portal/", "secrets/token-signing-keys"],
    },
  },
  webhooks: {
    summary: "WebhookService: an account's endpoints, their sealed secrets, and signed, retried deliveries of the platform's events (Standard Webhooks).",
    grpcPort: 50058,
    metricsPort: 9469,
    public: {},
    calls: {
      // Optional: the payloads stand without it (to: null), and webhooks need not wait for delivery's start.
      delivery: { need: "optional", for: "the recipient's address (to) in email events, read when each is sent, never stored" },
    },
    topics: {
      produces: [],
      // What it forwards: delivery's email statuses, the subscribers' changes, campaigns' state changes.
      consumes: [
        "email.status",
        "subscriber.created",
        "subscriber.status_changed",
        "subscriber.tag_added",
        "subscriber.tag_removed",
        "subscriber.deleted",
        "campaign.status_changed",
      ],
    },
    // SEALING_KEYS: the key ring endpoints' signing secrets are sealed under (packages/tokens, seal).
    secrets: ["MONGO_URL", "SEALING_KEYS"],
    optionalSecrets: {},
    data: {
      collections: ["webhook_endpoints", "webhook_deliveries"],
      dataDir: ["webhooks/", "bus/webhooks/", "secrets/sealing-keys"],
    },
  },
} as const satisfies Record<string, ServiceManifest>;
