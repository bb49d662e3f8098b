export { startPlatform, type PlatformOptions, type RunningPlatform } from "./platform.js";
