export * from './machines/index';
export * from './protocol/index';
