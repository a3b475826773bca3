// The settings catalogue as the system module's actions name it. The catalogue itself is in platform/ (config.ts
// reads the environment's defaults through it before any module exists); this file keeps the module's own imports short.
export * from '../../platform/settings-catalogue.ts';
