import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type * as K8s from "@kubernetes/client-node";
import { certificateVerdict, type CertificateStatus } from "../domain/domain-states.js";
import type { DomainRouting, DomainTarget } from "../usecases/custom-domains.js";

// A custom domain on Kubernetes: one networking.k8s.io/v1 Ingress (the
// routing: every path of the Host -> the portal's Service, which answers the
// preference pages, the signup forms (/subscribe/…) and /confirm there) and one
// cert-manager.io/v1 Certificate (its TLS), in CUSTOM_DOMAIN_NAMESPACE only.
//
// Ownership: the Certificate names the Ingress as its owner (ownerReferences),
// so deleting the Ingress lets Kubernetes' garbage collector delete the
// Certificate too; we delete both anyway, so removal does not depend on the
// collector running. The Ingress is the owner because it is the object the
// domain exists for (routing), and the Certificate only serves it. The TLS
// Secret is cert-manager's: it is deleted with the Certificate when
// cert-manager runs with --enable-certificate-owner-ref (see README); the
// portal is given no right on Secrets.
//
// Both objects carry: app.kubernetes.io/managed-by=emailsvc-portal,
// app.kubernetes.io/instance=<CUSTOM_DOMAIN_INSTANCE>, the label
// portal.emailsvc.io/account-id=<acc_…> (an id, no personal data) and the
// annotation portal.emailsvc.io/domain=<domain> (label values cannot hold
// every host name). Names are a hash of account and domain:
// emailsvc-cd-<20 hex> (Secret: …-tls), so an account that gives a domain up
// and another that claims it never share objects.
//
// @kubernetes/client-node 1.x is an ES module: it is loaded with require()
// (Node >= 20.19 loads ES modules so) on first use only, so a portal without
// custom domains never loads it.

export const MANAGED_BY = "emailsvc-portal";
export const ACCOUNT_LABEL = "portal.emailsvc.io/account-id";
export const DOMAIN_ANNOTATION = "portal.emailsvc.io/domain";
const CERT_GROUP = "cert-manager.io";
const CERT_VERSION = "v1";
const CERT_PLURAL = "certificates";

export interface KubeRoutingSettings {
  /** CUSTOM_DOMAIN_NAMESPACE. */
  namespace: string;
  /** CUSTOM_DOMAIN_ISSUER_NAME, CUSTOM_DOMAIN_ISSUER_KIND. */
  issuerName: string;
  issuerKind: "Issuer" | "ClusterIssuer";
  /** CUSTOM_DOMAIN_INGRESS_CLASS; unset: the cluster's default class. */
  ingressClass: string | undefined;
  /** CUSTOM_DOMAIN_SERVICE_NAME, CUSTOM_DOMAIN_SERVICE_PORT (a number or a port name): the portal page's Service. */
  serviceName: string;
  servicePort: number | string;
  /** CUSTOM_DOMAIN_INSTANCE: app.kubernetes.io/instance of the objects (the Helm release). */
  instance: string;
  /** Longest wait for one API call (default 15 s). */
  requestTimeoutMs?: number;
}

type Client = typeof K8s;

function loadClient(): Client {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an ES module, loaded on first use (see above)
  return require("@kubernetes/client-node") as Client;
}

/** The names of a domain's objects. */
export function objectNames(target: DomainTarget): { name: string; secretName: string } {
  const hash = createHash("sha256").update(`${target.accountId}\n${target.domain}`).digest("hex").slice(0, 20);
  return { name: `emailsvc-cd-${hash}`, secretName: `emailsvc-cd-${hash}-tls` };
}

export class KubernetesDomainRouting implements DomainRouting {
  private readonly networking: K8s.NetworkingV1Api;
  private readonly custom: K8s.CustomObjectsApi;
  private readonly timeoutMs: number;

  constructor(
    kubeConfig: K8s.KubeConfig,
    private readonly settings: KubeRoutingSettings,
  ) {
    const client = loadClient();
    this.networking = kubeConfig.makeApiClient(client.NetworkingV1Api);
    this.custom = kubeConfig.makeApiClient(client.CustomObjectsApi);
    this.timeoutMs = settings.requestTimeoutMs ?? 15_000;
  }

  /** In a Pod (KUBERNETES_SERVICE_HOST set): its ServiceAccount; else the KUBECONFIG file, else ~/.kube/config, else an error. */
  static fromEnvironment(settings: KubeRoutingSettings, access: { inCluster: boolean; kubeconfig: string | undefined }): KubernetesDomainRouting {
    const kc = new (loadClient().KubeConfig)();
    if (access.inCluster) kc.loadFromCluster();
    else if (access.kubeconfig) kc.loadFromFile(access.kubeconfig);
    else {
      // Fail at start, not at the first domain: custom domains on without a cluster is a setting's mistake
      // (the client's loadFromDefault would quietly pick http://localhost:8080).
      const file = join(homedir(), ".kube", "config");
      if (!existsSync(file)) throw new Error("custom domains need the Kubernetes API: run the portal in a Pod (its ServiceAccount) or set KUBECONFIG");
      kc.loadFromFile(file);
    }
    return new KubernetesDomainRouting(kc, settings);
  }

  /** From a kubeconfig document (tests). */
  static fromKubeconfig(yaml: string, settings: KubeRoutingSettings): KubernetesDomainRouting {
    const kc = new (loadClient().KubeConfig)();
    kc.loadFromString(yaml);
    return new KubernetesDomainRouting(kc, settings);
  }

  private labels(target: DomainTarget): Record<string, string> {
    return {
      "app.kubernetes.io/managed-by": MANAGED_BY,
      "app.kubernetes.io/instance": this.settings.instance,
      "app.kubernetes.io/component": "custom-domain",
      [ACCOUNT_LABEL]: target.accountId,
    };
  }

  /** The Ingress as we want it. */
  ingressBody(target: DomainTarget): K8s.V1Ingress {
    const { name, secretName } = objectNames(target);
    const port = typeof this.settings.servicePort === "number" ? { number: this.settings.servicePort } : { name: this.settings.servicePort };
    return {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name, namespace: this.settings.namespace, labels: this.labels(target), annotations: { [DOMAIN_ANNOTATION]: target.domain } },
      spec: {
        ...(this.settings.ingressClass ? { ingressClassName: this.settings.ingressClass } : {}),
        tls: [{ hosts: [target.domain], secretName }],
        rules: [
          {
            host: target.domain,
            http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: this.settings.serviceName, port } } }] },
          },
        ],
      },
    };
  }

  /** The Certificate as we want it, owned by the Ingress `owner`. */
  certificateBody(target: DomainTarget, owner: { name: string; uid: string }): Record<string, unknown> {
    const { name, secretName } = objectNames(target);
    return {
      apiVersion: `${CERT_GROUP}/${CERT_VERSION}`,
      kind: "Certificate",
      metadata: {
        name,
        namespace: this.settings.namespace,
        labels: this.labels(target),
        annotations: { [DOMAIN_ANNOTATION]: target.domain },
        ownerReferences: [{ apiVersion: "networking.k8s.io/v1", kind: "Ingress", name: owner.name, uid: owner.uid }],
      },
      spec: {
        secretName,
        dnsNames: [target.domain],
        issuerRef: { name: this.settings.issuerName, kind: this.settings.issuerKind, group: CERT_GROUP },
        // Old CertificateRequests are not kept (each holds a CSR).
        revisionHistoryLimit: 1,
        // The Secret cert-manager writes is labelled as ours too.
        secretTemplate: { labels: this.labels(target), annotations: { [DOMAIN_ANNOTATION]: target.domain } },
      },
    };
  }

  async ensure(target: DomainTarget): Promise<void> {
    const { namespace } = this.settings;
    const { name } = objectNames(target);
    let ingress = await this.call(() => this.networking.readNamespacedIngress({ name, namespace }), { absentOk: true });
    if (!ingress) {
      ingress = await this.call(() => this.networking.createNamespacedIngress({ namespace, body: this.ingressBody(target) }), { conflictOk: true });
      // Made by another replica meanwhile: read it for its uid.
      ingress ??= await this.call(() => this.networking.readNamespacedIngress({ name, namespace }));
    }
    const uid = ingress?.metadata?.uid;
    if (!uid) throw new Error("the Ingress has no uid");
    const certificate = await this.call(() => this.custom.getNamespacedCustomObject({ group: CERT_GROUP, version: CERT_VERSION, namespace, plural: CERT_PLURAL, name }), { absentOk: true });
    if (!certificate) {
      await this.call(
        () =>
          this.custom.createNamespacedCustomObject({
            group: CERT_GROUP,
            version: CERT_VERSION,
            namespace,
            plural: CERT_PLURAL,
            body: this.certificateBody(target, { name, uid }),
          }),
        { conflictOk: true },
      );
    }
  }

  async status(target: DomainTarget): Promise<CertificateStatus> {
    const { namespace } = this.settings;
    const { name } = objectNames(target);
    const [ingress, certificate] = await Promise.all([
      this.call(() => this.networking.readNamespacedIngress({ name, namespace }), { absentOk: true }),
      this.call(() => this.custom.getNamespacedCustomObject({ group: CERT_GROUP, version: CERT_VERSION, namespace, plural: CERT_PLURAL, name }), { absentOk: true }),
    ]);
    if (!ingress || !certificate) return { kind: "missing" };
    const conditions = (certificate as { status?: { conditions?: Array<Record<string, string>> } }).status?.conditions;
    return certificateVerdict(conditions);
  }

  async remove(target: DomainTarget): Promise<void> {
    const { namespace } = this.settings;
    const { name } = objectNames(target);
    await this.call(
      () => this.custom.deleteNamespacedCustomObject({ group: CERT_GROUP, version: CERT_VERSION, namespace, plural: CERT_PLURAL, name, propagationPolicy: "Background" }),
      { absentOk: true },
    );
    await this.call(() => this.networking.deleteNamespacedIngress({ name, namespace, propagationPolicy: "Background" }), { absentOk: true });
  }

  /** One API call with a deadline; 404 is undefined when `absentOk`, 409 is undefined when `conflictOk`. */
  private async call<T>(work: () => Promise<T>, options: { absentOk?: boolean; conflictOk?: boolean } = {}): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        work(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the Kubernetes API did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
        }),
      ]);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 404 && options.absentOk) return undefined;
      if (code === 409 && options.conflictOk) return undefined;
      if (typeof code === "number") throw new Error(`Kubernetes API answered ${code}: ${kubeMessage(err)}`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The Status message of a failed call (never the request). */
function kubeMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  try {
    const parsed = typeof body === "string" ? (JSON.parse(body) as { message?: string }) : (body as { message?: string } | undefined);
    if (parsed?.message) return parsed.message.slice(0, 300);
  } catch {
    // not JSON
  }
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}
