/**
 * A start-up failure the operator resolves (a damaged file in DATA_DIR, a port in use): the message
 * names the file or setting and the safe remedy, and is printed as one line without a stack.
 */
export abstract class OperatorError extends Error {
  abstract readonly code: string;
}
