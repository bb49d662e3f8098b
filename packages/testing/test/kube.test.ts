// Proves the kit's Kubernetes control plane: a real kube-apiserver with RBAC and
// ServiceAccount tokens, the controller manager's controllers, cert-manager's
// CRDs, and kubeconfigs that say what the kit's fields say.
import { readFile } from "node:fs/promises";
import { startKubeCluster, type KubeCluster } from "@emailsvc/testing";

// The first run builds the binaries (~6 min on a cold Go cache).
const BUILD_TIMEOUT = 20 * 60_000;

describe("startKubeCluster", () => {
  let kube: KubeCluster;

  beforeAll(async () => {
    kube = await startKubeCluster({ controllerManager: true });
  }, BUILD_TIMEOUT);

  afterAll(async () => {
    await kube?.stop();
  });

  it("serves the API over TLS signed by caData to the admin token", async () => {
    expect(kube.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(kube.caData).toContain("BEGIN CERTIFICATE");
    const version = await kube.request<{ gitVersion: string }>("GET", "/version");
    expect(version.status).toBe(200);
    expect(version.body.gitVersion).toBe("v1.31.4");
    const review = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(review.body.status.userInfo.groups).toContain("system:masters");
  });

  it("refuses an unknown token", async () => {
    expect((await kube.request("GET", "/api/v1/namespaces", { token: "nope" })).status).toBe(401);
  });

  it("writes kubeconfigs for a token and a namespace", async () => {
    const file = await kube.kubeconfigFile("tok", "ns1");
    const text = await readFile(file, "utf8");
    expect(text).toBe(kube.kubeconfig("tok", "ns1"));
    expect(text).toContain(`server: "${kube.server}"`);
    expect(text).toContain(`certificate-authority-data: ${Buffer.from(kube.caData).toString("base64")}`);
    expect(text).toContain('token: "tok"');
    expect(text).toContain('namespace: "ns1"');
    expect(kube.kubeconfig()).toContain(`token: "${kube.adminToken}"`);
  });

  it("creates namespaces with labels, and the controller manager gives them a default ServiceAccount", async () => {
    await kube.createNamespace("kit-a", { team: "a" });
    await kube.createNamespace("kit-a", { team: "b" }); // exists: relabels
    const ns = await kube.request("GET", "/api/v1/namespaces/kit-a");
    expect(ns.body.metadata.labels.team).toBe("b");
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await kube.request("GET", "/api/v1/namespaces/kit-a/serviceaccounts/default")).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  });

  it("issues ServiceAccount tokens that RBAC governs", async () => {
    await kube.createNamespace("kit-b");
    const token = await kube.serviceAccountToken("kit-b", "robot");
    expect(token.split(".")).toHaveLength(3);
    const who = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      token,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(who.body.status.userInfo.username).toBe("system:serviceaccount:kit-b:robot");
    // No role bound: refused.
    expect((await kube.request("GET", "/api/v1/namespaces/kit-b/configmaps", { token })).status).toBe(403);
    // A second call returns a token for the same (existing) account.
    expect(await kube.serviceAccountToken("kit-b", "robot")).toEqual(expect.any(String));
  });

  it("installs cert-manager's CRDs and serves Certificates", async () => {
    await kube.applyCrds("cert-manager");
    await kube.applyCrds("cert-manager"); // idempotent
    await kube.createNamespace("kit-c");
    const res = await kube.apply({
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: { name: "c1", namespace: "kit-c" },
      spec: { secretName: "c1-tls", dnsNames: ["a.example.com"], issuerRef: { name: "x", kind: "ClusterIssuer" } },
    });
    expect(res.status).toBe(201);
    // No cert-manager controller runs: a test plays it by writing the status subresource.
    const ready = await kube.request("PATCH", "/apis/cert-manager.io/v1/namespaces/kit-c/certificates/c1/status", {
      body: { status: { conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "issued", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }] } },
      contentType: "application/merge-patch+json",
    });
    expect(ready.status).toBe(200);
    expect(ready.body.status.conditions[0]).toMatchObject({ type: "Ready", status: "True" });
    // The CRD's schema is enforced: with strict field validation, an unknown field is refused.
    const bad = await kube.request("POST", "/apis/cert-manager.io/v1/namespaces/kit-c/certificates?fieldValidation=Strict", {
      body: { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "c2" }, spec: { secretName: "s", issuerRef: { name: "x" }, bogus: 1 } },
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('unknown field \\"spec.bogus\\"');
  });
});
