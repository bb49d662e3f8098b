// The tests on a real single-node Kubernetes (deploy/kube/test, startKubeNode
// of @emailsvc/testing): `npm run test:kube`. Not part of `npm test`: they
// need root, change the host while they run (bridges, firewall chains,
// cgroups; all undone on stop), and only one node runs on a machine at a time.
const base = require("./jest.config.js");

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ["<rootDir>/deploy/kube"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
  // No shared MongoDB or Kafka: helm.test.ts starts its own at the node's
  // address, where Pods reach them (the shared ones listen on 127.0.0.1).
  globalSetup: undefined,
  globalTeardown: undefined,
};
