// Unit tests for the fetch target policy (addresses and host names); core, trusted side.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isIpLiteral, judgeAddress, judgeHostname } from './address.js';

const refusedAddresses = [
  // loopback, every IPv4 spelling
  '127.0.0.1',
  '127.1',
  '0x7f.1',
  '0177.0.0.1',
  '017700000001',
  '2130706433',
  '127.000.000.1',
  '127.255.255.254',
  '0x7f000001',
  // unspecified, broadcast, multicast
  '0.0.0.0',
  '0',
  '0.1.2.3',
  '255.255.255.255',
  '224.0.0.1',
  '239.255.255.250',
  // private, link-local, CGNAT, reserved, benchmarking, documentation
  '10.0.0.1',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '169.254.0.1',
  '100.64.0.1',
  '100.127.255.254',
  '240.0.0.1',
  '198.18.0.1',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  // metadata
  '169.254.169.254',
  '169.254.170.2',
  '100.100.100.200',
  '192.0.0.192',
  '168.63.129.16',
  'fd00:ec2::254',
  '[fd00:ec2::254]',
  // IPv6 loopback / unspecified / IPv4-compatible
  '::1',
  '[::1]',
  '::',
  '0:0:0:0:0:0:0:1',
  '::127.0.0.1',
  '::7f00:1',
  '::a9fe:a9fe',
  '::8.8.8.8',
  // IPv4-mapped and -translated, including public addresses (mapped is refused outright)
  '::ffff:127.0.0.1',
  '[::ffff:7f00:1]',
  '::ffff:a9fe:a9fe',
  '::ffff:8.8.8.8',
  '::ffff:0:7f00:1',
  '[::ffff:0:7f00:1]',
  // link-local with zone ids, unique-local, site-local, multicast, discard, teredo, documentation, ORCHID
  'fe80::1',
  'fe80::1%eth0',
  'fe80::1%25eth0',
  '[fe80::1%25eth0]',
  'fd12:3456::1',
  'fc00::1',
  'fec0::1',
  'ff02::1',
  'ff05::1:3',
  '100::1',
  '2001::1',
  '2001:0:4136:e378:8000:63bf:3fff:fdd2',
  '2001:db8::1',
  '2001:20::1',
  // NAT64 / 6to4 embedding refused targets, local-use NAT64
  '64:ff9b::a9fe:a9fe',
  '64:ff9b::127.0.0.1',
  '64:ff9b::10.0.0.1',
  '64:ff9b:1::8.8.8.8',
  '2002:7f00:1::',
  '2002:a9fe:a9fe::1',
  '2002:c0a8:101::1',
  // unassigned IPv6 outside 2000::/3
  '4000::1',
  'e000::1',
  // not addresses at all
  '',
  'example.com',
  '1.2.3.4.5',
  '::g',
  '[::1',
  '256.0.0.1',
];

const allowedAddresses = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '2606:4700::1111',
  '[2606:4700::1111]',
  '2a00:1450:4001:81c::200e',
  '64:ff9b::808:808',
  '2002:808:808::1',
  '0x08080808',
  '134744072',
];

describe('judgeAddress', () => {
  it.each(refusedAddresses)('refuses %j with E_FETCH_TARGET', (a) => {
    const v = judgeAddress(a);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.code).toBe('E_FETCH_TARGET');
  });
  it.each(allowedAddresses)('allows public %j', (a) => {
    expect(judgeAddress(a)).toEqual({ ok: true });
  });
  it('names the reason for metadata and embedded targets', () => {
    const m = judgeAddress('169.254.169.254');
    expect(!m.ok && m.message).toMatch(/metadata/);
    const n = judgeAddress('64:ff9b::a9fe:a9fe');
    expect(!n.ok && n.message).toMatch(/NAT64/);
    const s = judgeAddress('2002:7f00:1::');
    expect(!s.ok && s.message).toMatch(/6to4/);
  });
});

const refusedHosts = [
  'localhost',
  'LOCALHOST',
  'LOCALHOST.',
  'localhost..',
  'db.localhost',
  'a.b.LocalHost.',
  'metadata',
  'metadata.',
  'METADATA.google.internal.',
  'metadata.google.internal',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.goog',
  'printer.local',
  'router.home.arpa',
  'svc.internal',
  'intranet',
  'nas',
  '1.0.0.127.in-addr.arpa',
  '127.1',
  '0x7f.1',
  '0177.0.0.1',
  '127.000.000.1',
  '2130706433',
  '169.254.169.254.',
  '0',
  '[::]',
  '[::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:a9fe:a9fe]',
  '[fd12:3456::1]',
  '[64:ff9b::a9fe:a9fe]',
  '[::127.0.0.1]',
  '[2002:7f00:1::]',
  '[fe80::1%25eth0]',
  '[fd00:ec2::254]',
  '100.100.100.200',
  '255.255.255.255',
  '224.0.0.1',
  '100.64.0.1',
  '169.254.170.2',
  '',
  'exa mple.com',
  'a/b',
  '[::1]x',
  // Unicode look-alikes the URL host parser maps (fullwidth letters, ideographic full stops)
  'ｌｏｃａｌｈｏｓｔ',
  '127。0。0。1',
  '１２７.0.0.1',
  'metadata。google。internal',
];
const allowedHosts = [
  'example.com',
  'EXAMPLE.com.',
  'api.example.com',
  '127.0.0.1.nip.io',
  'xn--bcher-kva.example',
  '8.8.8.8',
  '[2606:4700::1111]',
];

describe('judgeHostname', () => {
  it.each(refusedHosts)('refuses %j', (h) => {
    const v = judgeHostname(h);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.code).toBe('E_FETCH_TARGET');
  });
  it.each(allowedHosts)('lets %j through the name check (DNS names are judged again at connect time)', (h) => {
    expect(judgeHostname(h)).toEqual({ ok: true });
  });
  it('tells IP literals from names', () => {
    expect(isIpLiteral('[::1]')).toBe(true);
    expect(isIpLiteral('0x7f.1')).toBe(true);
    expect(isIpLiteral('169.254.169.254.')).toBe(true);
    expect(isIpLiteral('example.com')).toBe(false);
  });
});

describe('shared cases: fetch-targets.json hosts', () => {
  const cases = JSON.parse(
    readFileSync(new URL('../../../test/fixtures/cases/fetch-targets.json', import.meta.url), 'utf8'),
  ) as {
    refused: { url: string; kind: string }[];
    allowed_when_rules_allow: { url: string; kind: string }[];
  };
  const hostCases = cases.refused.filter((c) => c.url.startsWith('https://') && !new URL(c.url).username);
  it.each(hostCases.map((c) => [c.kind, c.url]))('%s: %s is refused on its parsed host', (_k, url) => {
    expect(judgeHostname(new URL(url).hostname).ok).toBe(false);
  });
  it.each(cases.allowed_when_rules_allow.map((c) => [c.kind, c.url]))('%s: %s passes', (_k, url) => {
    expect(judgeHostname(new URL(url).hostname).ok).toBe(true);
  });
});
