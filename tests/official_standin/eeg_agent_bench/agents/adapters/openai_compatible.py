"""Stand-in adapter: only the submit tool."""


class OpenAICompatibleAdapter:
    @staticmethod
    def _build_submit_tool(response_schema):
        parameters = response_schema if (response_schema or {}).get("properties") else {"type": "object"}
        return {"type": "function",
                "function": {"name": "submit_final_answer", "description": "Stand-in submit tool.",
                             "parameters": parameters}}
