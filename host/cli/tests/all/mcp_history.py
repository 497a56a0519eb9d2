# Drives `seshat mcp` with the official MCP Python SDK (`pip install mcp`): searches the history
# for a word in this project, then in every project, then reads the first match back; prints what
# it saw as JSON for the Rust test to check.
import asyncio
import json
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result):
    text = "".join(getattr(c, "text", "") for c in result.content)
    try:
        return json.loads(text).get("text", text)
    except (ValueError, AttributeError):
        return text


async def main() -> None:
    binary, env, cwd, query = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    params = StdioServerParameters(command=binary, args=["mcp"], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            here = text_of(await session.call_tool("history_search", {"query": query}))
            everywhere = text_of(await session.call_tool("history_search", {"query": query, "all": True}))
            found = re.search(r"session (\w+) seq (\d+)", everywhere)
            read_back = ""
            if found:
                answer = await session.call_tool("history_read", {"session": found.group(1), "seq": int(found.group(2))})
                read_back = text_of(answer)
            print(json.dumps({"tools": names, "here": here, "everywhere": everywhere, "read": read_back}))


asyncio.run(main())
