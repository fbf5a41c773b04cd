// The markdown renderer's HTML text (before the sanitizer): raw HTML off, links and images restricted, task lists,
// invisible characters escaped, alignment as classes; test code.
import { describe, expect, it } from 'vitest';
import { markdownToHtml, safeImageUrl, safeLinkUrl } from './markdown.js';
import { BlockSplitter } from './stream.js';

describe('markdownToHtml', () => {
  it('renders CommonMark and GFM tables, strikethrough, autolinks and task lists', () => {
    const html = markdownToHtml(
      '# T\n\n*a* **b** ~~c~~ https://example.org/x main.py\n\n| x | y |\n|:--|--:|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n',
    );
    expect(html).toContain('<h1>T</h1>');
    expect(html).toContain('<em>a</em> <strong>b</strong> <s>c</s>');
    // autolinks need a scheme: a file name like main.py is never a link
    expect(html).toContain('<a href="https://example.org/x">https://example.org/x</a> main.py');
    expect(html).toContain('<th class="align-left">x</th>');
    expect(html).toContain('<td class="align-right">2</td>');
    expect(html).not.toContain('style=');
    expect(html).toContain('<li class="task"><span class="task-box done" role="img" aria-label="done">☑</span> done');
    expect(html).toContain('<span class="task-box" role="img" aria-label="not done">☐</span> todo');
  });

  it('shows raw HTML as text and renders no link or image outside the allowed schemes', () => {
    const html = markdownToHtml(
      [
        '<script>alert(1)</script> <img src=x onerror=alert(1)> <svg onload=alert(1)>',
        '[a](javascript:alert(1)) [b](data:text/html,<b>x</b>) [c](vbscript:x) [d](/relative) [e](JAVASCRIPT:x)',
        '[ok](https://example.org/?q=1) [mail](mailto:a@example.org)',
        '![i](javascript:x) ![j](http://example.org/a.png) ![k](https://example.org/k.png)',
        '![svg](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=) ![png](data:image/png;base64,iVBORw0KGgo=)',
      ].join('\n\n'),
    );
    expect(html).not.toMatch(/<script|<img|<svg|<[a-z]+ [^>]*on[a-z]+=/i);
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toMatch(/href="(?!https:\/\/example\.org\/\?q=1"|mailto:a@example\.org")/);
    expect(html).toContain('<a href="https://example.org/?q=1">ok</a>');
    expect(html).toContain('<span class="md-image" data-src="https://example.org/k.png" data-alt="k"></span>');
    expect(html).toContain('data-src="data:image/png;base64,iVBORw0KGgo="');
    expect(html).not.toContain('data-src="data:image/svg');
    expect(html).not.toContain('data-src="http://example.org');
  });

  it('writes bidi, zero-width and control characters of text and code as visible escapes', () => {
    const html = markdownToHtml('abc \u202egnp.exe\u202c zero\u200bwidth\n\n```\nif (x\u2066) {}\n```\n');
    expect(html).toContain('abc \\u202egnp.exe\\u202c zero\\u200bwidth');
    expect(html).toContain('if (x\\u2066) {}');
    expect(html).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200b]/);
  });

  it('keeps a fence language as a class for the highlighter, and nothing else of its info string', () => {
    expect(markdownToHtml('```TypeScript title="x"\nlet a = 1;\n```\n')).toBe(
      '<pre><code class="language-typescript">let a = 1;\n</code></pre>\n',
    );
    expect(markdownToHtml('```"><script>\nx\n```\n')).toContain('<code class="language-script">');
  });

  it('judges link and image URLs by their parsed scheme', () => {
    for (const u of ['https://a.example', 'http://a.example/x', 'mailto:a@b.example'])
      expect(safeLinkUrl(u)).toBe(true);
    for (const u of ['javascript:x', ' javascript:x', 'data:text/html,x', '/x', 'x', 'file:///etc/passwd', 'ftp://a'])
      expect(safeLinkUrl(u)).toBe(false);
    expect(safeImageUrl('https://a.example/i.png')).toBe(true);
    expect(safeImageUrl('http://a.example/i.png')).toBe(false);
    expect(safeImageUrl('data:image/svg+xml;base64,AAAA')).toBe(false);
  });
});

describe('BlockSplitter', () => {
  const cuts = (text: string) => {
    const s = new BlockSplitter();
    const out: number[] = [];
    // fed piece by piece, as a stream arrives
    for (let i = 1; i <= text.length; i++) {
      const c = s.advance(text.slice(0, i));
      if (out[out.length - 1] !== c && c > 0) out.push(c);
    }
    return out.map((c) => text.slice(c, c + 6));
  };

  it('cuts before an unindented line that follows a blank line', () => {
    expect(cuts('# A\n\npara one\nstill one\n\npara two\n\n- x\n')).toEqual(['para o', 'para t', '- x\n']);
  });

  it('never cuts inside a fenced code block, a list item continuation or indented code', () => {
    const text = 'intro\n\n```\ncode\n\nmore code\n```\n\nafter\n\n- item\n\n  continued\n\n    indented\n\nend\n';
    expect(cuts(text)).toEqual(['```\nco', 'after\n', '- item', 'end\n']);
  });

  it('a longer closing fence closes; a shorter or other one does not', () => {
    expect(cuts('````\na\n\n```\nb\n\n~~~~\nc\n````\n\nz\n')).toEqual(['z\n']);
  });
});
