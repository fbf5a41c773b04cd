#!/bin/sh
# A tiny MCP server (2025-11-25, stdio) whose answer to each tools/call is scripted by its `do` argument: ok (answers
# with its pid), crash (exits 3), freeze and cancel (never answers), oversize (one line over SCRIPTED_BYTES, default
# 9 MB); for the session-renewal tests, which start it some 2,000 times (a POSIX sh starts in about a millisecond).
# Test peer, untrusted side. Every other request gets -32601; notifications are read and ignored.
big=${SCRIPTED_BYTES:-9000000}
while IFS= read -r line; do
  case $line in
    *'"id":'*) rest=${line#*\"id\":}; id=${rest%%[,\}]*} ;;
    *) continue ;;
  esac
  case $line in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"step","description":"one scripted step","inputSchema":{"type":"object","properties":{"do":{"type":"string","enum":["ok","crash","freeze","cancel","oversize"]}},"required":["do"]}}]}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      case $line in
        *'"do":"crash"'*) exit 3 ;;
        *'"do":"freeze"'* | *'"do":"cancel"'*) ;;
        *'"do":"oversize"'*)
          printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' "$id"
          head -c "$big" /dev/zero | tr '\0' x
          printf '"}]}}\n' ;;
        *) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok %s"}]}}\n' "$id" "$$" ;;
      esac ;;
    *'"method":"ping"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}\n' "$id" ;;
  esac
done
