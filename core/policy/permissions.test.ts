// Unit tests for the permission engine (rule parsing, matching, merge order, modes); trusted side.
import { describe, expect, it } from 'vitest';
import {
  compilePolicy,
  decide,
  normalizeOrigin,
  parseMatcher,
  parseRule,
  suggestRule,
  type RuleSet,
  type RuleSubject,
  type StoredDecision,
} from './permissions.js';
import { TyError } from '../errors.js';

const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const REV2 = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';

const tool = (toolName = 'weather', revision = REV): RuleSubject => ({ kind: 'tool', toolName, revision });
const fetchReq = (target: string, access: 'read' | 'write' = 'read'): RuleSubject => ({
  kind: 'fetch',
  toolName: 'weather',
  revision: REV,
  target,
  access,
});

function policy(...sets: RuleSet[]) {
  return compilePolicy(sets);
}

function errorOf(fn: () => unknown): TyError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TyError) return e;
    throw e;
  }
  throw new Error('expected a TyError');
}

describe('parseRule', () => {
  it('accepts every documented kind and gives canonical text', () => {
    expect(parseRule('tool(weather)').text).toBe('tool(weather)');
    expect(parseRule(`tool(weather@${REV})`).text).toBe(`tool(weather@${REV})`);
    expect(parseRule('Fetch(READ:HTTPS://API.Example.COM:443/)').text).toBe('fetch(read:https://api.example.com)');
    expect(parseRule('fetch(*:https://*.example.com:8443)').text).toBe('fetch(*:https://*.example.com:8443)');
    expect(parseRule('mcp(files/read_file)').text).toBe('mcp(files/read_file)');
    expect(parseRule('mcp-resource(files/file:///tmp/*)').text).toBe('mcp-resource(files/file:///tmp/*)');
    expect(parseRule('mcp-prompt(srv/summarize)').text).toBe('mcp-prompt(srv/summarize)');
    expect(parseRule('popup(custom-html)').text).toBe('popup(custom-html)');
    expect(parseRule('popup(https://docs.example.com)').text).toBe('popup(https://docs.example.com)');
    expect(parseRule('secret(API_TOKEN)').text).toBe('secret(API_TOKEN)');
  });

  it('an unknown kind close to a known one is named ("did you mean")', () => {
    expect(() => parseRule('fech(read:https://a.example)')).toThrow(
      /unknown kind "fech"; did you mean fetch\(\.\.\.\)\?; kinds are tool, fetch/,
    );
    expect(() => parseRule('shell(ls)')).toThrow(/unknown kind "shell"; kinds are/);
  });

  it.each([
    ['weather', 'no parentheses'],
    ['tool()', 'empty pattern'],
    ['shell(ls)', 'unknown kind'],
    ['tool(bad name)', 'white space'],
    ['tool(x@notacid)', 'bad revision'],
    ['fetch(https://a.example.com)', 'missing access'],
    ['fetch(delete:https://a.example.com)', 'unknown access'],
    ['fetch(read:http://a.example.com)', 'not https'],
    ['fetch(read:https://a.example.com/path)', 'path in origin'],
    ['fetch(read:https://user:pw@a.example.com)', 'credentials in origin'],
    ['fetch(read:https://a.*.example.com)', 'inner wildcard'],
    ['fetch(read:https://*.com)', 'wildcard over a TLD'],
    ['fetch(read:https://*.0.0.1)', 'wildcard over an IP'],
    ['fetch(read:https://a.example.com?x=1)', 'query'],
    ['mcp(files)', 'no tool part'],
    ['mcp(fi les/x)', 'white space'],
    ['popup(http://x.example.com)', 'not https'],
  ])('refuses %s (%s) with E_INVALID_SETTINGS', (text) => {
    const e = errorOf(() => parseRule(text));
    expect(e.code).toBe('E_INVALID_SETTINGS');
    expect(e.message).toContain('invalid rule');
  });
});

describe('origin matching', () => {
  const wild = parseRule('fetch(read:https://*.example.com)');
  const exact = parseRule('fetch(read:https://api.example.com)');

  it('wildcards match subdomains only, at a label boundary', () => {
    expect(wild.matches(fetchReq('https://api.example.com'))).toBe(true);
    expect(wild.matches(fetchReq('https://a.b.example.com'))).toBe(true);
    expect(wild.matches(fetchReq('https://example.com'))).toBe(false);
    expect(wild.matches(fetchReq('https://example.com.evil.net'))).toBe(false);
    expect(wild.matches(fetchReq('https://evilexample.com'))).toBe(false);
    expect(wild.matches(fetchReq('https://api.example.com.'))).toBe(true);
    expect(wild.matches(fetchReq('https://api.example.co'))).toBe(false);
    expect(wild.matches(fetchReq('https://xexample.com'))).toBe(false);
  });

  it('hosts compare case-insensitively and IDN as punycode', () => {
    expect(exact.matches(fetchReq('https://API.EXAMPLE.COM'))).toBe(true);
    expect(exact.matches(fetchReq('https://api.example.com/'))).toBe(true);
    const idn = parseRule('fetch(read:https://bücher.example)');
    expect(idn.matches(fetchReq('https://xn--bcher-kva.example'))).toBe(true);
  });

  it('ports: no port means 443 only; an explicit port matches only itself', () => {
    expect(exact.matches(fetchReq('https://api.example.com:443'))).toBe(true);
    expect(exact.matches(fetchReq('https://api.example.com:8443'))).toBe(false);
    expect(wild.matches(fetchReq('https://a.example.com:8443'))).toBe(false);
    const p = parseRule('fetch(read:https://api.example.com:8443)');
    expect(p.matches(fetchReq('https://api.example.com:8443'))).toBe(true);
    expect(p.matches(fetchReq('https://api.example.com'))).toBe(false);
  });

  it('access: read does not cover write; * covers both', () => {
    expect(exact.matches(fetchReq('https://api.example.com', 'write'))).toBe(false);
    expect(parseRule('fetch(*:https://api.example.com)').matches(fetchReq('https://api.example.com', 'write'))).toBe(
      true,
    );
    expect(parseRule('fetch(write:*)').matches(fetchReq('https://x.example.org', 'write'))).toBe(true);
    expect(parseRule('fetch(write:*)').matches(fetchReq('https://x.example.org', 'read'))).toBe(false);
  });

  it('a target that is not a plain https origin never matches', () => {
    const any = parseRule('fetch(*:*)');
    for (const t of [
      'http://api.example.com',
      'https://u:p@api.example.com',
      'https://api.example.com/x',
      'javascript:alert(1)',
      'https://api.example.com#x',
    ]) {
      expect(any.matches(fetchReq(t))).toBe(false);
    }
    expect(normalizeOrigin('https://[2606:4700:0::1111]')).toEqual({ host: '[2606:4700::1111]', port: '' });
    expect(
      parseRule('fetch(read:https://[2606:4700::1111])').matches(fetchReq('https://[2606:4700:0:0::1111]:443')),
    ).toBe(true);
  });

  it('look-alike targets of every shape stay outside a wildcard and an exact origin', () => {
    const suffixes = ['example.com', 'api.example.org', 'b.c.example.net'];
    for (const suffix of suffixes) {
      const w = parseRule(`fetch(*:https://*.${suffix})`);
      const e = parseRule(`fetch(*:https://${suffix})`);
      const evil = [
        `https://${suffix}.evil.net`,
        `https://evil${suffix}`,
        `https://evil-${suffix}`,
        `https://${suffix}evil.com`,
        `https://a.${suffix}.evil.net`,
        `https://a.${suffix}:444`,
        `https://evil.net#@a.${suffix}`,
        `https://a.${suffix}@evil.net`,
        `https://evil.net\\.${suffix}`,
        `https://evil.net%23.${suffix}`,
        `https://evil.net/.${suffix}`,
        `http://a.${suffix}`,
        `wss://a.${suffix}`,
      ];
      for (const t of evil) {
        expect(w.matches(fetchReq(t)), `${t} vs *.${suffix}`).toBe(false);
        expect(e.matches(fetchReq(t)), `${t} vs ${suffix}`).toBe(false);
      }
      // Spellings the URL parser maps to the same host do match: they reach the same place.
      for (const t of [
        `https://A.${suffix.toUpperCase()}`,
        `https://a.${suffix}.`,
        `https://a%2e${suffix}`,
        `https://a.${suffix}:443/`,
      ]) {
        expect(w.matches(fetchReq(t)), t).toBe(true);
      }
    }
  });

  it('IP targets never match a domain wildcard', () => {
    expect(parseRule('fetch(read:https://*.example.com)').matches(fetchReq('https://127.0.0.1'))).toBe(false);
  });
});

describe('other kinds', () => {
  it('tool names are case-sensitive globs; NAME@REV pins one revision', () => {
    expect(parseRule('tool(weather)').matches(tool('Weather'))).toBe(false);
    expect(parseRule('tool(gh_*)').matches(tool('gh_issue'))).toBe(true);
    expect(parseRule('tool(gh_*)').matches(tool('xgh_issue'))).toBe(false);
    expect(parseRule(`tool(weather@${REV})`).matches(tool('weather', REV2))).toBe(false);
    expect(parseRule(`tool(weather@${REV})`).matches(tool('weather', REV))).toBe(true);
    expect(parseRule('tool(weather)').matches(fetchReq('https://a.example.com'))).toBe(false);
  });

  it('mcp rules match server and tool separately', () => {
    const s = (target: string, kind: RuleSubject['kind'] = 'mcp'): RuleSubject => ({
      kind,
      toolName: 'bridge',
      revision: REV,
      target,
    });
    expect(parseRule('mcp(files/*)').matches(s('files/read_file'))).toBe(true);
    expect(parseRule('mcp(files/*)').matches(s('filesx/read_file'))).toBe(false);
    expect(parseRule('mcp(*)').matches(s('any/thing'))).toBe(true);
    expect(parseRule('mcp(files/read_file)').matches(s('files/read_file', 'mcp-prompt'))).toBe(false);
    expect(parseRule('mcp-resource(files/file:///tmp/*)').matches(s('files/file:///tmp/a.txt', 'mcp-resource'))).toBe(
      true,
    );
    expect(parseRule('mcp-resource(files/file:///tmp/*)').matches(s('files/file:///etc/passwd', 'mcp-resource'))).toBe(
      false,
    );
  });

  it('popup custom-html and origins are distinct', () => {
    const p = (target: string): RuleSubject => ({ kind: 'popup', toolName: 't', revision: REV, target });
    expect(parseRule('popup(custom-html)').matches(p('custom-html'))).toBe(true);
    expect(parseRule('popup(custom-html)').matches(p('https://a.example.com'))).toBe(false);
    expect(parseRule('popup(https://a.example.com)').matches(p('custom-html'))).toBe(false);
    expect(parseRule('popup(https://a.example.com)').matches(p('https://A.example.com'))).toBe(true);
  });
});

describe('decide: order across scopes and modes', () => {
  it('deny beats allow across scopes, whichever scope holds which', () => {
    const cases: [RuleSet['scope'], RuleSet['scope']][] = [
      ['user', 'flags'],
      ['flags', 'user'],
      ['project', 'local'],
      ['session', 'project'],
    ];
    for (const [denyScope, allowScope] of cases) {
      const d = decide(
        policy(
          { scope: denyScope, deny: ['tool(weather)'] },
          { scope: allowScope, allow: ['tool(*)'], mode: 'unrestricted' },
        ),
        tool(),
      );
      expect(d.effect).toBe('deny');
      expect(d.trace).toMatchObject({ list: 'deny', rule: 'tool(weather)', scope: denyScope });
    }
  });

  it('alwaysAsk beats allow and unrestricted mode; allow beats ask', () => {
    const p = policy(
      { scope: 'user', allow: ['fetch(read:https://api.example.com)'], mode: 'unrestricted' },
      { scope: 'project', alwaysAsk: ['fetch(*:https://*.example.com)'] },
    );
    const d = decide(p, fetchReq('https://api.example.com'));
    expect(d).toMatchObject({ effect: 'ask', alwaysAsk: true, trace: { list: 'alwaysAsk', scope: 'project' } });
    const p2 = policy({ scope: 'user', ask: ['tool(*)'] }, { scope: 'project', allow: ['tool(weather)'] });
    expect(decide(p2, tool()).effect).toBe('allow');
    expect(decide(p2, tool('other')).effect).toBe('ask');
    expect(decide(p2, tool('other')).trace).toMatchObject({ list: 'ask', rule: 'tool(*)', scope: 'user' });
  });

  it('each mode has its documented default', () => {
    const s = (mode: 'strict' | 'standard' | 'unrestricted') => policy({ scope: 'user', mode });
    const secret: RuleSubject = { kind: 'secret', toolName: 'weather', revision: REV, target: 'TOKEN' };
    const storage: RuleSubject = { kind: 'storage', toolName: 'weather', revision: REV };
    expect(decide(s('strict'), tool()).effect).toBe('ask');
    expect(decide(s('strict'), storage).effect).toBe('ask');
    expect(decide(s('standard'), tool()).effect).toBe('allow');
    expect(decide(s('standard'), storage).effect).toBe('allow');
    expect(decide(s('standard'), fetchReq('https://a.example.com')).effect).toBe('ask');
    expect(decide(s('standard'), secret).effect).toBe('ask');
    expect(decide(s('unrestricted'), fetchReq('https://a.example.com', 'write')).effect).toBe('allow');
    expect(decide(s('unrestricted'), secret).trace).toMatchObject({
      list: 'mode',
      rule: 'mode unrestricted',
      scope: 'user',
    });
    expect(decide(policy(), tool()).trace).toMatchObject({ rule: 'mode standard', scope: 'default' });
  });

  it('the highest-precedence scope sets the mode', () => {
    const p = policy(
      { scope: 'user', mode: 'unrestricted' },
      { scope: 'project', mode: 'strict' },
      { scope: 'flags', mode: 'standard' },
    );
    expect(p.mode).toBe('standard');
    expect(p.modeScope).toBe('flags');
    expect(policy({ scope: 'user', mode: 'unrestricted' }, { scope: 'local', mode: 'strict' }).mode).toBe('strict');
  });

  it('the manifest is an upper bound in every mode, even against allow rules', () => {
    const p = policy({ scope: 'flags', mode: 'unrestricted', allow: ['fetch(*:*)'] });
    const d = decide(p, { ...fetchReq('https://api.example.com'), requested: false });
    expect(d).toMatchObject({ effect: 'deny', trace: { list: 'manifest' } });
  });

  it('remembered answers are keyed by revision identity; a "no" beats an allow rule', () => {
    const yes: StoredDecision = {
      kind: 'fetch',
      revision: REV,
      toolName: 'weather',
      target: 'https://api.example.com',
      access: 'read',
      allow: true,
      scope: 'session',
    };
    const p = policy({ scope: 'user', mode: 'strict' });
    expect(decide(p, fetchReq('https://api.example.com'), [yes]).effect).toBe('allow');
    expect(decide(p, { ...fetchReq('https://api.example.com'), revision: REV2 }, [yes]).effect).toBe('ask');
    expect(decide(p, fetchReq('https://api.example.com', 'write'), [yes]).effect).toBe('ask');
    const no: StoredDecision = { ...yes, allow: false, scope: 'permanent' };
    expect(
      decide(policy({ scope: 'flags', allow: ['fetch(*:*)'] }), fetchReq('https://api.example.com'), [no]).effect,
    ).toBe('deny');
    // alwaysAsk ignores a remembered yes
    expect(
      decide(policy({ scope: 'user', alwaysAsk: ['fetch(*:*)'] }), fetchReq('https://api.example.com'), [yes]).effect,
    ).toBe('ask');
  });

  it('suggests the narrowest allow rule', () => {
    expect(suggestRule(fetchReq('https://API.example.com:443', 'write'))).toBe('fetch(write:https://api.example.com)');
    expect(suggestRule(tool())).toBe(`tool(weather@${REV})`);
    expect(
      parseRule(suggestRule(fetchReq('https://api.example.com'))).matches(fetchReq('https://api.example.com')),
    ).toBe(true);
  });

  it('an invalid rule names scope, source and list position; flags give E_USAGE', () => {
    const e = errorOf(() =>
      compilePolicy([{ scope: 'project', source: '/p/.tycli/settings.json', allow: ['tool(ok)', 'nope'] }]),
    );
    expect(e.code).toBe('E_INVALID_SETTINGS');
    expect(e.message).toContain('/p/.tycli/settings.json');
    expect(e.message).toContain('allow[1]');
    expect(errorOf(() => compilePolicy([{ scope: 'flags', source: '--deny', deny: ['bad'] }])).code).toBe('E_USAGE');
    expect(errorOf(() => compilePolicy([{ scope: 'flags', mode: 'yolo' as never }])).code).toBe('E_USAGE');
  });
});

describe('parseMatcher', () => {
  it('matches *, tool-name globs and rules', () => {
    expect(parseMatcher('*')(tool())).toBe(true);
    expect(parseMatcher('weath*')(tool())).toBe(true);
    expect(parseMatcher('other')(tool())).toBe(false);
    expect(parseMatcher('fetch(read:*)')(fetchReq('https://a.example.com'))).toBe(true);
    expect(parseMatcher('fetch(read:*)')(tool())).toBe(false);
    expect(() => parseMatcher('bad name!')).toThrow(TyError);
  });
});

describe('rule messages', () => {
  it('a fetch rule without its access class says where the access class goes', () => {
    let message = '';
    try {
      parseRule('fetch(https://x.example.com)');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('fetch(read:https://x.example.com)');
  });
});

describe('registry rules (registration protocol clients)', () => {
  const reg = (target: string, principal = 'protocol:ide'): RuleSubject => ({
    kind: 'registry',
    toolName: 'weather',
    revision: REV,
    target,
    principal,
  });
  it('parse ACTION and ACTION:PRINCIPAL, match per principal with globs, and refuse unknown actions', () => {
    expect(parseRule('registry(add)').matches(reg('add', 'origin:https://a.example'))).toBe(true);
    expect(parseRule('registry(add)').matches(reg('activate'))).toBe(false);
    expect(parseRule('registry(activate:protocol:ide)').matches(reg('activate'))).toBe(true);
    expect(parseRule('registry(activate:protocol:ide)').matches(reg('activate', 'protocol:other'))).toBe(false);
    expect(
      parseRule('registry(*:origin:https://*.example.com)').matches(reg('remove', 'origin:https://app.example.com')),
    ).toBe(true);
    expect(parseRule('registry(*:origin:https://*.example.com)').matches(reg('remove', 'protocol:ide'))).toBe(false);
    expect(parseRule('registry(add)').matches(tool())).toBe(false);
    expect(parseRule('REGISTRY(Add:protocol:ide)').text).toBe('registry(add:protocol:ide)');
    expect(errorOf(() => parseRule('registry(publish)')).code).toBe('E_INVALID_SETTINGS');
    expect(suggestRule(reg('activate'))).toBe('registry(activate:protocol:ide)');
  });
  it('standard mode allows connect, add and read, asks for activate and remove; deny wins; strict asks for all', () => {
    const std = policy({ scope: 'user' });
    for (const a of ['connect', 'add', 'read']) expect(decide(std, reg(a)).effect).toBe('allow');
    for (const a of ['activate', 'remove']) expect(decide(std, reg(a)).effect).toBe('ask');
    expect(decide(policy({ scope: 'user', allow: ['registry(activate:protocol:ide)'] }), reg('activate')).effect).toBe(
      'allow',
    );
    expect(
      decide(policy({ scope: 'user', allow: ['registry(*)'], deny: ['registry(add:protocol:ide)'] }), reg('add'))
        .effect,
    ).toBe('deny');
    expect(decide(policy({ scope: 'user', mode: 'strict' }), reg('read')).effect).toBe('ask');
  });
});
