# Drives `seshat mcp` with the official MCP Python SDK (`pip install mcp`): lists the tools, calls
# each with no arguments and a few with arguments that fail, and prints what it saw as JSON — every
# description and every answer's text — for the Rust test to check.
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    binary, env, cwd = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    params = StdioServerParameters(command=binary, args=["mcp"], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            seen = {"tools": [{"name": t.name, "description": t.description or ""} for t in tools], "answers": []}
            calls = [(t.name, {}) for t in tools] + [
                ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),
                ("create_relations", {"relations": [{"from": "Nobody", "to": "Noone", "relationType": "knows"}]}),
                ("open_nodes", {"names": ["Nobody"]}),
            ]
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                seen["answers"].append({"name": name, "is_error": bool(getattr(result, "is_error", getattr(result, "isError", False))), "text": text})
            print(json.dumps(seen))


asyncio.run(main())
