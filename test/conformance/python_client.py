# An MCP client no one here wrote: the Python mcp SDK driving a tycli bridge (stdio command, or HTTP URL + token); prints what it saw as JSON; test peer.
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def is_error(r):
    return getattr(r, 'is_error', getattr(r, 'isError', None))


async def drive(s, prefix):
    out = {}
    init = await s.initialize()
    out['protocol'] = getattr(init, 'protocol_version', None) or getattr(init, 'protocolVersion', None)
    out['instructions'] = getattr(init, 'instructions', None)
    out['tools'] = sorted(t.name for t in (await s.list_tools()).tools)
    out['text'] = (await s.call_tool(prefix + 'test_simple_text', {})).content[0].text
    out['isError'] = is_error(await s.call_tool(prefix + 'test_error_handling', {}))
    bad = await s.call_tool(prefix + 'json_schema_2020_12_tool', {'nope': 1})
    out['badArgs'] = [is_error(bad), bad.content[0].text]
    uri = ('tymcp://sdk/' if prefix else '') + 'test://template/5/data'
    out['read'] = (await s.read_resource(uri)).contents[0].text
    p = await s.get_prompt(prefix + 'test_prompt_with_arguments', {'arg1': 'a', 'arg2': 'b'})
    out['prompt'] = p.messages[0].content.text
    return out


async def main():
    if sys.argv[1] == 'http':
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
        url, token, prefix = sys.argv[2], sys.argv[3], sys.argv[4]
        async with create_mcp_http_client(headers={'Authorization': f'Bearer {token}'}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    print(json.dumps(await drive(s, prefix)))
        return
    prefix = sys.argv[2]
    params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            print(json.dumps(await drive(s, prefix)))


asyncio.run(main())
