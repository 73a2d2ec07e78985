export {
  SERVICE_NAMES,
  FRONT_SERVICE_NAMES,
  DEFAULT_SERVICE_PORTS,
  serviceEntryPath,
  type ServiceName,
} from './service-names.js';
export { serviceEnvironment, type DocketServiceSettings } from './service-environment.js';
export { launchOneProcess, oneProcessEntryPath, oneProcessEnvironment, parseAllListening, type LaunchedOneProcess } from './one-process-launch.js';
export {
  launchService,
  parseListeningUrl,
  describeExit,
  ServiceLaunchError,
  type LaunchedService,
  type LaunchServiceOptions,
  type ServiceExit,
} from './launch-service.js';
export { waitForServing, type WaitForServingOptions } from './wait-for-serving.js';
export { serveConsole, type ConsoleServer, type ConsoleServices, type ServeConsoleOptions } from './console-server.js';
export { demoHandler, type DemoHandlerOptions } from './worker-demo-handler.js';
export { DEFAULT_CONSOLE_PORT } from './dev-config.js';
export { freePort } from './free-port.js';
export { parseReplicaCounts, type ReplicaCounts } from './replica-counts.js';
export {
  renderNginxFrontConfig,
  loadNginxFrontTemplate,
  NGINX_FRONT_TEMPLATE,
  type FrontedService,
  type NginxFrontConfig,
} from './nginx-front-config.js';
export { layOutFront, startFront, type Front, type FrontLayout, type FrontOptions } from './front.js';
export { locateFrontPrograms, FrontProgramMissingError, type FrontPrograms } from './front-programs.js';
export { renderPortSwitchConfig, loadPortSwitchTemplate, PORT_SWITCH_TEMPLATE } from './port-switch-config.js';
