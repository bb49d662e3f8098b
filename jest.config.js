// One Jest configuration for the whole repository. Test files are TypeScript,
// compiled by SWC (no type check here: `npm test` builds with tsc first).
// Workspace packages are imported from their built `dist`.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  // deploy: the Helm chart applied to a real Kubernetes API server (deploy/helm/test).
  roots: ["<rootDir>/packages", "<rootDir>/services", "<rootDir>/proto", "<rootDir>/embedded", "<rootDir>/deploy", "<rootDir>/dashboard"],
  testMatch: ["**/test/**/*.test.ts", "**/src/**/*.test.ts"],
  // deploy/kube: the tests on a real Kubernetes node, which need root and change
  // the host while they run; `npm run test:kube` (jest.kube.config.js) runs them.
  testPathIgnorePatterns: ["/node_modules/", "/dist/", "<rootDir>/deploy/kube/"],
  transform: {
    "^.+\\.ts$": ["@swc/jest", { jsc: { target: "es2022", parser: { syntax: "typescript" } }, module: { type: "commonjs" } }],
    // ESM-only dependencies (below), compiled to CommonJS for Jest's CJS mode.
    // Node itself loads them with require(esm) (Node >= 20.19), as the built services do.
    "^.+\\.m?js$": ["@swc/jest", { jsc: { target: "es2022", parser: { syntax: "ecmascript" } }, module: { type: "commonjs" } }],
  },
  // Everything in node_modules runs as shipped, except the ESM-only packages
  // of @kubernetes/client-node (the portal's custom domains), which Jest 30
  // cannot require on Node 20 (require(esm) in Jest needs Node >= 24.9).
  transformIgnorePatterns: ["/node_modules/(?!(@kubernetes/client-node|openid-client|oauth4webapi|jose)/)", "^(?:(?!/node_modules/).)*/dist/"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  // Real servers (MongoDB-compatible and Kafka) are found or started once for
  // the whole run; see packages/testing.
  globalSetup: "<rootDir>/packages/testing/dist/global-setup.js",
  globalTeardown: "<rootDir>/packages/testing/dist/global-teardown.js",
  testTimeout: 60000,
};
