/** The node flags production runs the service with: package.json's scripts and the Dockerfile's CMD (test/deploy/container-files.spec.ts keeps them equal). */
export const SERVICE_NODE_FLAGS = ['--max-old-space-size=192', '--max-semi-space-size=32'];
