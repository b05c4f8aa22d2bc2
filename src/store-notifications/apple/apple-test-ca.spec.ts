import { Environment, SignedDataVerifier, VerificationException } from '@apple/app-store-server-library';
import { createAppleTestCa, signAppleJws } from './apple-test-ca.js';

describe('the Apple test CA', () => {
  it("signs what Apple's own SignedDataVerifier accepts when its root is trusted, and nothing else", async () => {
    const ca = await createAppleTestCa();
    const other = await createAppleTestCa();
    const payload = {
      notificationType: 'TEST',
      notificationUUID: 'u-1',
      signedDate: Date.now(),
      version: '2.0',
      data: { bundleId: 'com.example', environment: 'Sandbox' },
    };
    const verifier = new SignedDataVerifier([ca.root], false, Environment.SANDBOX, 'com.example');
    await expect(verifier.verifyAndDecodeNotification(signAppleJws(ca, payload))).resolves.toMatchObject({ notificationType: 'TEST' });
    await expect(verifier.verifyAndDecodeNotification(signAppleJws(other, payload))).rejects.toBeInstanceOf(VerificationException);
  });
});
