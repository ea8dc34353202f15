'use strict';
// Hand-made JWTs for the attack tests, with node:crypto only, so that the
// tests do not share a JWT library (or its bugs) with anything.

const crypto = require('node:crypto');

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const b64urlJson = (obj) => b64url(JSON.stringify(obj));

/**
 * signJwt({header, claims, alg, key})
 *   alg: 'HS256' (key: Buffer|string, raw HMAC key bytes),
 *        'ES256' (key: PEM string or KeyObject, P-256 private key),
 *        'none'  (no signature; the token ends with '.').
 *   header: extra/overriding header members (e.g. {alg: 'none'} to lie).
 *   The signing algorithm is `alg`; the header's alg is `header.alg ?? alg`,
 *   so a test can sign with one algorithm and announce another.
 */
function signJwt({ claims, alg = 'HS256', key, header = {} }) {
  const h = { alg, typ: 'JWT', ...header };
  const signingInput = `${b64urlJson(h)}.${b64urlJson(claims)}`;
  let sig;
  switch (alg) {
    case 'HS256':
      sig = crypto.createHmac('sha256', key).update(signingInput).digest();
      break;
    case 'ES256':
      sig = crypto.sign('sha256', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' });
      break;
    case 'none':
      sig = Buffer.alloc(0);
      break;
    default:
      throw new Error(`signJwt: unsupported alg ${alg}`);
  }
  return `${signingInput}.${b64url(sig)}`;
}

/** Decode without verifying: {header, claims, signature (base64url string)}. */
function decodeJwt(token) {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Error(`not a JWS compact token: ${parts.length} parts`);
  return {
    header: JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')),
    claims: JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')),
    signature: parts[2],
  };
}

/** Replace the payload of a token, keeping its header and signature. */
function tamperJwt(token, mutate) {
  const [h, , s] = token.split('.');
  const { claims } = decodeJwt(token);
  const changed = mutate({ ...claims }) || claims;
  return `${h}.${b64urlJson(changed)}.${s}`;
}

const nowSec = () => Math.floor(Date.now() / 1000);

/**
 * keyPair(type, options): a fresh key pair, {privateKey, publicKey} as KeyObjects and
 * {privateKeyPem, publicKeyPem} (PKCS#8, SPKI).
 *
 * Every test key comes from here. Node 20 deadlocks when a garbage collection runs while
 * a KeyObject that crypto.generateKeyPairSync returned is exported (JWK or PEM) or
 * signs: the collection destroys the generation job, whose destructor takes the key's
 * mutex, which the export already holds (the API suite hung in oidc_storm's set-up:
 * main thread in ~KeyGenJob under ExportJWKRsaKey). Here the job hands out PEM strings
 * only, and the KeyObjects are parsed from them: they share no lock with any job.
 */
function keyPair(type, options = {}) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync(type, {
    ...options,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    privateKey: crypto.createPrivateKey(privateKey),
    publicKey: crypto.createPublicKey(publicKey),
    privateKeyPem: privateKey,
    publicKeyPem: publicKey,
  };
}

/** A fresh P-256 key pair as PEM strings. */
function generateEcKeyPair() {
  const { privateKeyPem, publicKeyPem } = keyPair('ec', { namedCurve: 'P-256' });
  return { privateKeyPem, publicKeyPem };
}

module.exports = { b64url, b64urlJson, signJwt, decodeJwt, tamperJwt, nowSec, keyPair, generateEcKeyPair };
