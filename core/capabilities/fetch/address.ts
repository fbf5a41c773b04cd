// Network target policy for mediated fetch (IP address + host name judgement on ipaddr.js); core, trusted side.
import ipaddr from 'ipaddr.js';

/** A decision on one fetch target. Refusals always carry E_FETCH_TARGET. */
export type TargetVerdict = { ok: true } | { ok: false; code: 'E_FETCH_TARGET'; message: string };

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const refuse = (message: string): TargetVerdict => ({ ok: false, code: 'E_FETCH_TARGET', message });
const OK: TargetVerdict = { ok: true };

/**
 * Cloud instance-metadata and platform endpoints reachable from inside a VM. Most sit in ranges refused
 * anyway (link-local, CGNAT, unique-local); they are listed so the refusal says why, and so the ones in
 * otherwise public space (Azure's 168.63.129.16) are refused too. Sources: AWS IMDS (169.254.169.254,
 * fd00:ec2::254), ECS task metadata (169.254.170.2), GCP, Azure IMDS + WireServer, Alibaba (100.100.100.200),
 * Oracle (192.0.0.192).
 */
export const METADATA_ADDRESSES: readonly string[] = [
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  '100.100.100.200',
  '192.0.0.192',
  '168.63.129.16',
  'fd00:ec2::254',
];

/** Metadata host names (lower case, no trailing dot). Single-label names are refused anyway. */
export const METADATA_HOSTNAMES: readonly string[] = [
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.com',
  'metadata.tencentyun.com',
];

/**
 * Special-use and local-only DNS suffixes (RFC 6761 localhost, RFC 6762 local, RFC 8375 home.arpa,
 * ICANN's internal, and common router suffixes); a name equal to or under one is refused.
 */
export const LOCAL_SUFFIXES: readonly string[] = [
  'localhost',
  'local',
  'internal',
  'home.arpa',
  'localdomain',
  'lan',
  'intranet',
  'corp',
  'arpa',
];

const metadataSet = new Set(METADATA_ADDRESSES.map((a) => ipaddr.parse(a).toNormalizedString()));

function judgeV4(a: IPv4): TargetVerdict {
  const text = a.toString();
  if (metadataSet.has(a.toNormalizedString())) return refuse(`${text} is a cloud metadata address`);
  const range = a.range();
  // Allow-list: only ordinary unicast. Everything ipaddr.js classifies otherwise (loopback, private,
  // linkLocal, carrierGradeNat, multicast, broadcast, unspecified, reserved, benchmarking, as112, amt) is refused.
  if (range !== 'unicast') return refuse(`${text} is ${/^[aeiou]/.test(range) ? 'an' : 'a'} ${range} address`);
  return OK;
}

function embeddedV4(bytes: number[], offset: number): IPv4 {
  return new ipaddr.IPv4(bytes.slice(offset, offset + 4));
}

function judgeV6(a: IPv6): TargetVerdict {
  const text = a.toString();
  if (metadataSet.has(a.toNormalizedString())) return refuse(`${text} is a cloud metadata address`);
  const bytes = a.toByteArray();
  // IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96) and IPv4-compatible (::/96, deprecated).
  if (a.isIPv4MappedAddress()) return refuse(`${text} is an IPv4-mapped IPv6 address`);
  const range = a.range();
  if (range === 'rfc6145') return refuse(`${text} is an IPv4-translated IPv6 address`);
  if (bytes.slice(0, 12).every((b) => b === 0))
    return refuse(`${text} is an unspecified, loopback or IPv4-compatible IPv6 address`);
  if (range === '6to4') {
    // 2002:AABB:CCDD::/48 embeds the IPv4 address AA.BB.CC.DD (RFC 3056).
    const inner = judgeV4(embeddedV4(bytes, 2));
    return inner.ok ? OK : refuse(`${text} is a 6to4 address embedding a refused IPv4 target (${inner.message})`);
  }
  if (range === 'rfc6052') {
    // 64:ff9b::/96 well-known NAT64 prefix embeds the IPv4 address in the last 32 bits (RFC 6052);
    // 64:ff9b:1::/48 is the local-use prefix (RFC 8215): a site's own translator, refused outright.
    const isWellKnown = bytes.slice(4, 12).every((b) => b === 0);
    if (!isWellKnown) return refuse(`${text} is a local-use NAT64 address`);
    const inner = judgeV4(embeddedV4(bytes, 12));
    return inner.ok ? OK : refuse(`${text} is a NAT64 address embedding a refused IPv4 target (${inner.message})`);
  }
  if (range !== 'unicast') return refuse(`${text} is ${/^[aeiou]/.test(range) ? 'an' : 'a'} ${range} address`);
  // Allow-list: global unicast 2000::/3 only (refuses the deprecated site-local fec0::/10 and unassigned space).
  if (((bytes[0] ?? 0) & 0xe0) !== 0x20) return refuse(`${text} is outside global unicast space (2000::/3)`);
  return OK;
}

/**
 * Judge one IP address as connected to: an IPv4 in any form the WHATWG URL host parser accepts
 * (dotted decimal, octal, hex, short, a single number) or an IPv6 (bracketed or not, with or without a
 * zone id). Anything that is not an IP address is refused. Pure; used before a request on literal hosts
 * and, on Node, on every resolved address at connect time.
 * @returns TargetVerdict (never throws)
 */
export function judgeAddress(address: string): TargetVerdict {
  if (typeof address !== 'string' || address.length === 0 || address.length > 256) return refuse('not an IP address');
  let s = address.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  if (s.includes(':')) {
    let v6: IPv6;
    try {
      // Percent-encoded zone ids as in URLs (fe80::1%25eth0); the zone never changes the verdict.
      v6 = ipaddr.IPv6.parse(s.replace(/%25/i, '%'));
    } catch {
      return refuse(`"${s.slice(0, 80)}" is not a valid IPv6 address`);
    }
    return judgeV6(v6);
  }
  const v4 = parseIPv4Loose(s);
  if (v4 === undefined) return refuse(`"${s.slice(0, 80)}" is not an IP address`);
  return judgeV4(v4);
}

/** Parse IPv4 text the way the WHATWG URL host parser does (so "0177.0.0.1" and "127.1" mean 127.0.0.1). */
function parseIPv4Loose(s: string): IPv4 | undefined {
  if (!/^[0-9a-fA-FxX.]+$/.test(s)) return undefined;
  let host: string;
  try {
    host = new URL(`https://${s}/`).hostname;
  } catch {
    return undefined;
  }
  if (!ipaddr.IPv4.isValidFourPartDecimal(host)) return undefined;
  return ipaddr.IPv4.parse(host);
}

/** True when `host` (a URL hostname, brackets allowed) is an IP literal rather than a DNS name. */
export function isIpLiteral(host: string): boolean {
  if (host.startsWith('[')) return true;
  return parseIPv4Loose(host.replace(/\.$/, '')) !== undefined;
}

/**
 * Judge the host of a URL before any connection: IP literals by judgeAddress; names by policy (lower-cased,
 * trailing dots removed): `localhost` and `*.localhost`, metadata host names, special-use and local-only
 * suffixes, and single-label names (resolved through local search domains) are refused. A name that passes
 * may still resolve to a refused address: hosts that control DNS (Node) judge the connected address too;
 * the browser cannot (see SECURITY.md).
 * @param hostname a WHATWG URL `hostname` (already IDNA-mapped, lower-cased, IPv4 forms normalized) or raw host text
 * @param opts.fromUrl true when `hostname` is a URL object's `hostname` (skips re-normalizing it)
 * @returns TargetVerdict (never throws)
 */
export function judgeHostname(hostname: string, opts: { fromUrl?: boolean } = {}): TargetVerdict {
  if (typeof hostname !== 'string' || hostname.length === 0 || hostname.length > 253 + 2)
    return refuse('missing or overlong host');
  let host = hostname;
  if (!host.startsWith('[') && !opts.fromUrl) {
    // Normalize through the URL parser so raw inputs get the same treatment as parsed URLs.
    try {
      host = new URL(`https://${host}/`).hostname;
    } catch {
      return refuse(`"${hostname.slice(0, 80)}" is not a valid host`);
    }
  }
  if (host.startsWith('[')) return judgeAddress(host);
  const name = host.toLowerCase().replace(/\.+$/, '');
  if (name.length === 0) return refuse('empty host');
  if (parseIPv4Loose(name) !== undefined) return judgeAddress(name);
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(name)) return refuse(`"${name.slice(0, 80)}" is not a valid DNS name`);
  if (METADATA_HOSTNAMES.includes(name)) return refuse(`${name} is a cloud metadata host name`);
  for (const suffix of LOCAL_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return refuse(`${name} is a local-only name (.${suffix})`);
  }
  if (!name.includes('.')) return refuse(`${name} is a single-label name (resolved on the local network)`);
  return OK;
}
