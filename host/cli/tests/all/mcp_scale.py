# Drives `seshat mcp` with the official MCP Python SDK (`pip install mcp`): every memory tool with
# N entities (3 observations each) or N names at once, each call bounded by a deadline, and prints
# what each call answered as JSON for the Rust test to check. A call past its deadline is reported
# as "timed_out" (never waited for): the test fails on it, naming the tool and N.
#
# argv: seshat binary, environment (JSON), working directory, N, deadline in seconds.
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def calls(n: int):
    names = [f"Entity {i}" for i in range(n)]
    entities = [{"name": m, "entityType": "thing", "observations": [f"{m} fact {k}" for k in range(3)]} for m in names]
    relations = [{"from": names[i], "to": names[(i + 1) % n], "relationType": "precedes"} for i in range(n)]
    return [
        ("create_entities", {"entities": entities}),
        ("create_relations", {"relations": relations}),
        ("add_observations", {"observations": [{"entityName": m, "contents": [f"{m} later"]} for m in names]}),
        ("open_nodes", {"names": names}),
        ("search_nodes", {"query": "fact"}),
        ("read_graph", {}),
        ("delete_observations", {"deletions": [{"entityName": m, "observations": [f"{m} later"]} for m in names]}),
        ("delete_relations", {"relations": relations}),
        ("delete_entities", {"entityNames": names}),
        ("open_nodes", {"names": names}),
    ]


async def main() -> None:
    binary, env, cwd, n, deadline = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    params = StdioServerParameters(command=binary, args=["mcp"], env=env, cwd=cwd)
    seen = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for name, arguments in calls(n):
                try:
                    result = await asyncio.wait_for(session.call_tool(name, arguments), deadline)
                except Exception as e:  # the SDK's timeout or ours: reported, never waited for
                    seen.append({"name": name, "timed_out": True, "error": repr(e)})
                    break
                structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
                if structured is None:
                    structured = json.loads("".join(getattr(c, "text", "") for c in result.content))
                is_error = bool(getattr(result, "isError", getattr(result, "is_error", False)))
                seen.append({"name": name, "timed_out": False, "is_error": is_error, "structured": structured})
    print(json.dumps(seen))


asyncio.run(main())
