// One Jest configuration for the whole repository. Test files are TypeScript,
// compiled by SWC (no type check here: `npm test` builds with tsc first).
// Workspace packages are imported from their built `dist`.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  // deploy: the Helm chart applied to a real Kubernetes API server (deploy/helm/test).
  roots: ["<rootDir>/packages", "<rootDir>/services", "<rootDir>/proto", "<rootDir>/embedded", "<rootDir>/deploy"],
  testMatch: ["**/test/**/*.test.ts", "**/src/**/*.test.ts"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
  transform: {
    "^.+\\.ts$": ["@swc/jest", { jsc: { target: "es2022", parser: { syntax: "typescript" } }, module: { type: "commonjs" } }],
  },
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  // Real servers (MongoDB-compatible and Kafka) are found or started once for
  // the whole run; see packages/testing.
  globalSetup: "<rootDir>/packages/testing/dist/global-setup.js",
  globalTeardown: "<rootDir>/packages/testing/dist/global-teardown.js",
  testTimeout: 60000,
};
