// Real servers for the test suites: found in the environment, started in
// containers, or started from local binaries built once into a cache.
export { ensureMongo, prepareFerretDB, startFerretDB, FERRETDB_VERSION, type FerretDBOptions, type MongoServer } from "./ferretdb.js";
export { ensureKafka, prepareKafka, startLocalKafka, KAFKA_VERSION, type KafkaServer, type LocalKafkaOptions } from "./kafka.js";
export { findPostgres, startPostgres, type PostgresServer } from "./postgres.js";
export { freePort } from "./ports.js";
export { startTestDnsServer, type TestDnsServer } from "./dns-server.js";
export {
  CERT_MANAGER_VERSION,
  KUBE_VERSION,
  prepareKube,
  startKubeCluster,
  type KubeCluster,
  type KubeObject,
  type KubePrepared,
  type KubeRequestOptions,
  type KubeResponse,
} from "./kube.js";
export { prepareCertManager, startCertManager, type CertManager } from "./cert-manager.js";
export { prepareTraefik, startTraefik, TRAEFIK_VERSION, type Traefik } from "./traefik.js";
export { KUBE_ROUTER_VERSION, prepareKubeRouter, startKubeRouter, type KubeRouter } from "./kube-router.js";
export {
  COREDNS_VERSION,
  KUBE_NODE_IMAGES,
  prepareKubeNode,
  startKubeNode,
  type KubeNode,
  type KubeNodeOptions,
  type KubeNodePrepared,
} from "./kube-node.js";
export { SmtpSink, type ArrivedMessage, type SinkReply, type SmtpSinkOptions } from "./smtp-sink.js";
export { cacheRoot, ensureCachedDir, machineLock } from "./cache.js";
export { dockerAvailable } from "./docker.js";
export { asCall, memoryLogger, mongoUrl, openTestStore, STORE_KINDS, testTenant, waitFor, type StoreKind, type TestStore } from "./services.js";
export {
  npmStartNodeArgs,
  SERVICE_PROCESSES,
  startNodeProcess,
  startPlatformProcess,
  startServiceProcesses,
  type NodeProcess,
  type PlatformProcess,
  type ServiceProcesses,
  type ServiceProcessName,
} from "./platform-process.js";
export {
  axeViolations,
  CHROMIUM_ARGS,
  chromiumPath,
  DEFAULT_CHROMIUM_PATH,
  expectFitsViewport,
  expectNoAxeViolations,
  formatAxeViolations,
  launchChromium,
  launchChromiumProfile,
  openInCrossSiteFrame,
  tabUntilFocused,
  WCAG_TAGS,
  type AxeCheckOptions,
  type AxeViolation,
  type ChromiumLaunchOptions,
  type ChromiumProfileOptions,
  type CrossSiteFrame,
} from "./browser.js";
export { HARAKA_VERSION, startHaraka, type HarakaOptions, type HarakaRelay, type HarakaRoute } from "./haraka.js";
export { DEFAULT_SPAMASSASSIN_PATH, spamAssassinPath, spamAssassinReport, type SpamReport } from "./spamassassin.js";
export { startSesEmulator, type SesEmulator, type SesSentMessage, type SesStoredEmail } from "./ses-emulator.js";
export { snsTestSigner, TEST_SNS_CERT_URL, type SignOptions as SnsSignOptions, type SnsTestSigner } from "./sns-signer.js";
