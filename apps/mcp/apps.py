from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "apps.mcp"
    label = "mcp"
    verbose_name = "MCP servers"

    def ready(self) -> None:
        from apps.mcp.services import mcp_thread_closes_listen, mcp_thread_sessions_close
        from apps.runs.runtime import add_loop_service
        from apps.threads import services as thread_services

        # A thread's own MCP processes (session_scope: thread) end with the thread.
        if mcp_thread_sessions_close not in thread_services.thread_cleanups:
            thread_services.thread_cleanups.append(mcp_thread_sessions_close)
        # Runs on Celery workers (or other servers) open theirs: the delete reaches them too.
        add_loop_service("mcp-thread-closes", mcp_thread_closes_listen)
