import 'reflect-metadata'; // @peculiar/x509 resolves its parts with tsyringe, which needs it loaded first
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createPrivateKey, type KeyObject, webcrypto } from 'node:crypto';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import jwt from 'jsonwebtoken';

// A stand-in for Apple's signing chain: a root, an intermediate and a leaf shaped like Apple's
// (ECDSA P-256, the marker extensions Apple's SignedDataVerifier requires), so tests and
// `sample-notification` can sign payloads that the real verifier accepts once this root is trusted.
// Never trust it in production: APPLE_ROOT_CERTIFICATES there holds Apple's own roots.

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** Apple's marker on the WWDR intermediate and on the App Store signing leaf. */
const APPLE_INTERMEDIATE_OID = '1.2.840.113635.100.6.2.1';
const APPLE_LEAF_OID = '1.2.840.113635.100.6.11.1';
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

export type AppleTestCa = { root: Buffer; intermediate: Buffer; leaf: Buffer; leafKey: KeyObject };

export async function createAppleTestCa(o: { notBefore?: Date; notAfter?: Date } = {}): Promise<AppleTestCa> {
  const notBefore = o.notBefore ?? new Date(Date.UTC(2000, 0, 1));
  const notAfter = o.notAfter ?? new Date(Date.UTC(2099, 0, 1));
  const keys = async () => (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const [rootKeys, intermediateKeys, leafKeys] = [await keys(), await keys(), await keys()];
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=Test Root CA (subscription-records), O=Test',
    keys: rootKeys,
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const intermediate = await x509.X509CertificateGenerator.create({
    subject: 'CN=Test WWDR Intermediate (subscription-records), O=Test',
    issuer: root.subject,
    publicKey: intermediateKeys.publicKey,
    signingKey: rootKeys.privateKey,
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      new x509.Extension(APPLE_INTERMEDIATE_OID, false, new Uint8Array([0x05, 0x00])),
    ],
  });
  const leaf = await x509.X509CertificateGenerator.create({
    subject: 'CN=Test App Store signing (subscription-records), O=Test',
    issuer: intermediate.subject,
    publicKey: leafKeys.publicKey,
    signingKey: intermediateKeys.privateKey,
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING,
    extensions: [new x509.BasicConstraintsExtension(false, undefined, true), new x509.Extension(APPLE_LEAF_OID, false, new Uint8Array([0x05, 0x00]))],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
  return {
    root: Buffer.from(root.rawData),
    intermediate: Buffer.from(intermediate.rawData),
    leaf: Buffer.from(leaf.rawData),
    leafKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }),
  };
}

/** Signs a payload as the App Store does: ES256 with the chain (leaf, intermediate, root) in x5c. */
export function signAppleJws(ca: AppleTestCa, payload: object): string {
  return jwt.sign(payload, ca.leafKey, {
    algorithm: 'ES256',
    header: { alg: 'ES256', x5c: [ca.leaf, ca.intermediate, ca.root].map((c) => c.toString('base64')) },
  });
}

/** The test CA kept under a folder (DATA_DIR/apple-test-ca), created on first use. */
export async function loadOrCreateAppleTestCa(dir: string): Promise<{ ca: AppleTestCa; rootPath: string; created: boolean }> {
  const file = (name: string) => path.join(dir, name);
  const rootPath = file('root.der');
  if (existsSync(rootPath)) {
    return {
      ca: {
        root: readFileSync(rootPath),
        intermediate: readFileSync(file('intermediate.der')),
        leaf: readFileSync(file('leaf.der')),
        leafKey: createPrivateKey({ key: readFileSync(file('leaf-key.der')), format: 'der', type: 'pkcs8' }),
      },
      rootPath,
      created: false,
    };
  }
  const ca = await createAppleTestCa();
  // Only the CA's own folder is private: DATA_DIR's mode is the embedded PostgreSQL's business.
  mkdirSync(path.dirname(dir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(file('intermediate.der'), ca.intermediate);
  writeFileSync(file('leaf.der'), ca.leaf);
  writeFileSync(file('leaf-key.der'), ca.leafKey.export({ format: 'der', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(rootPath, ca.root);
  return { ca, rootPath, created: true };
}
