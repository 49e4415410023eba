"""The Django, Daphne, Twisted, asgiref and SQLite internals deerflow_site/server/ and
deerflow_site/db/ rely on, checked against the installed versions.

The behaviour these modules give users is tested elsewhere (deerflow_site/server/README.md
names each test). What is checked here is the shape of the internals themselves where a
behaviour test would fail late or not at all: the private methods overridden still exist and
take the arguments the overrides take, the private attributes read are still set, and the
methods copied from upstream (Daphne's ``create_application``, Django's ``ASGIHandler.handle``)
are still the code that was copied. When one of these fails after an upgrade, compare the
named upstream code with the module that relies on it, adapt the module, then the expectation.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def fingerprint(function) -> str:
    """A digest of a function's code without its docstring, comments and layout."""
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        node.body = body[1:]
    return hashlib.sha256(ast.unparse(node).encode()).hexdigest()[:16]


def source(function) -> str:
    return textwrap.dedent(inspect.getsource(function))


# -- methods copied from upstream: the copy is only right while the original is unchanged --------


def test_daphne_create_application_is_the_code_bounded_server_copies():
    from daphne.server import Server

    # deerflow_site/server/daphne_server.py: BoundedServer.create_application is this method
    # with a _PulledBody as the receive queue of plain HTTP requests.
    assert fingerprint(Server.create_application) == "70369507a4ef2ab7", (
        "Daphne's Server.create_application changed; bring BoundedServer.create_application in line:\n"
        + source(Server.create_application))


def test_django_asgi_handle_is_the_code_the_sync_chain_handler_copies():
    from django.core.handlers.asgi import ASGIHandler

    # deerflow_site/server/handlers.py: SyncChainASGIHandler.handle is this method without the
    # thread hops its one-hop chain makes unneeded.
    assert fingerprint(ASGIHandler.handle) == "757c338bcbdd6d35", (
        "Django's ASGIHandler.handle changed; bring SyncChainASGIHandler.handle in line:\n" + source(ASGIHandler.handle))


def test_django_sqlite_cursor_and_begin_are_the_code_the_backend_wraps():
    from django.db.backends.sqlite3.base import DatabaseWrapper

    # deerflow_site/db/sqlite_backend/base.py replaces create_cursor (to hand the cursor its
    # wrapper) and defers _start_transaction_under_autocommit (the BEGIN) to the first statement.
    assert fingerprint(DatabaseWrapper.create_cursor) == "1ef6e5bbbd51fa10", source(DatabaseWrapper.create_cursor)
    assert fingerprint(DatabaseWrapper._start_transaction_under_autocommit) == "1a01fdfabc526219", (
        source(DatabaseWrapper._start_transaction_under_autocommit))


# -- methods overridden or called: still there, with the arguments we pass ------------------------


def _signatures():
    from asgiref.sync import ThreadSensitiveContext
    from daphne.http_protocol import HTTPFactory, WebRequest
    from daphne.server import Server
    from django.core.handlers.asgi import ASGIHandler
    from django.db.backends.base.operations import BaseDatabaseOperations
    from django.db.backends.sqlite3 import base as sqlite_base
    from django.db.models import Field, Model

    return [
        # daphne_server.py
        (Server.run, "(self)"),
        (Server.listen_success, "(self, port)"),
        (Server.create_application, "(self, protocol, scope)"),
        (Server.handle_reply, "(self, protocol, message)"),
        (WebRequest.gotLength, "(self, length)"),
        (WebRequest.handleContentChunk, "(self, data)"),
        (WebRequest.process, "(self)"),
        (HTTPFactory.buildProtocol, "(self, addr)"),
        # handlers.py
        (ASGIHandler.load_middleware, "(self, is_async=False)"),
        (ASGIHandler.get_response_async, "(self, request)"),
        (ASGIHandler.handle, "(self, scope, receive, send)"),
        (ASGIHandler.__call__, "(self, scope, receive, send)"),
        (ASGIHandler.read_body, "(self, receive)"),
        (ASGIHandler.create_request, "(self, scope, body_file)"),
        (ASGIHandler.run_get_response, "(self, request)"),
        (ASGIHandler.send_response, "(self, response, send)"),
        (ASGIHandler.listen_for_disconnect, "(self, receive)"),
        (ThreadSensitiveContext.__init__, "(self, *, executor: concurrent.futures._base.Executor | None = None) -> None"),
        # sqlite_backend/base.py
        (sqlite_base.DatabaseWrapper.get_new_connection, "(self, conn_params)"),
        (sqlite_base.DatabaseWrapper.create_cursor, "(self, name=None)"),
        (sqlite_base.DatabaseWrapper._start_transaction_under_autocommit, "(self)"),
        (sqlite_base.DatabaseWrapper._commit, "(self)"),
        (sqlite_base.DatabaseWrapper._rollback, "(self)"),
        (sqlite_base.DatabaseWrapper._close, "(self)"),
        (sqlite_base.SQLiteCursorWrapper.execute, "(self, query, params=None)"),
        (sqlite_base.SQLiteCursorWrapper.executemany, "(self, query, param_list)"),
        # prepared_sql.py
        (Model.from_db, "(db, field_names, values)"),
        (Field.pre_save, "(self, model_instance, add)"),
        (Field.get_db_prep_save, "(self, value, connection)"),
        (Field.get_db_prep_value, "(self, value, connection, prepared=False)"),
        (Field.get_col, "(self, alias, output_field=None)"),
        (BaseDatabaseOperations.get_db_converters, "(self, expression)"),
    ]


@pytest.mark.parametrize(("function", "expected"), _signatures(), ids=lambda v: getattr(v, "__qualname__", None))
def test_an_overridden_or_called_internal_keeps_its_signature(function, expected):
    assert str(inspect.signature(function)) == expected


def test_daphne_command_line_takes_a_server_class():
    from daphne.cli import CommandLineInterface
    from daphne.server import Server

    # BoundedCommandLine swaps the server in through this class attribute.
    assert CommandLineInterface.server_class is Server
    assert "self.server_class(" in source(CommandLineInterface.run)
    assert "ready_callable" in inspect.signature(Server.__init__).parameters


# -- call sites inside upstream code that the overrides count on ----------------------------------


def test_daphne_run_builds_its_http_factory_and_reports_ready_as_bounded_server_expects():
    from daphne.server import Server

    run = source(Server.run)
    # BoundedServer.http_factory (a property) swaps in _Factory as run() assigns it.
    assert "self.http_factory = HTTPFactory(self)" in run
    # The launcher's ready pipe is written through ready_callable once the endpoints listen.
    assert run.index("listen(self.http_factory)") < run.index("self.ready_callable()")
    assert "self.listen_success" in run


def test_daphne_shuts_down_through_the_trigger_bounded_server_drains_in():
    from daphne.http_protocol import WebRequest
    from daphne.server import Server
    from daphne.ws_protocol import WebSocketProtocol

    # BoundedServer.kill_all_applications drains the runs, then closes the open streams with a
    # reconnect hint, before Daphne's own cancels what is left; run() registers it at shutdown.
    assert 'reactor.addSystemEventTrigger("before", "shutdown", self.kill_all_applications)' in source(Server.run)
    assert str(inspect.signature(Server.kill_all_applications)) == "(self)"
    # _close_streams tells a started SSE response by these, and closes an open websocket.
    assert "self._response_started = True" in source(WebRequest.handle_reply)
    assert "self.finished" in source(WebRequest.handle_reply)
    assert WebSocketProtocol.STATE_OPEN is not None and callable(WebSocketProtocol.sendClose)


def test_daphne_process_reads_the_body_from_the_request_content_file():
    from daphne.http_protocol import WebRequest

    process = source(WebRequest.process)
    # _Drained stands where Daphne reads the body: seek, closed, read(buffer_size).
    assert "self.content.seek(0, 0)" in process
    assert "self.content.closed" in process
    assert "self.content.read(buffer_size)" in process
    assert "self.server.create_application" in process


def test_twisted_request_internals_bounded_request_reads_are_still_there():
    from twisted.web import http

    # Twisted's own form parsing, switched off by BoundedRequest.
    assert "self._parsePOSTFormSubmission" in source(http.Request.requestReceived)
    assert "self._disconnected = True" in source(http.Request.connectionLost)
    # The channel state BoundedRequest reads to pause and resume the body while it checks
    # the credentials.
    assert "self._networkProducer = " in source(http.HTTPChannel.connectionMade)
    channel = http.HTTPChannel()
    assert channel._handlingRequest is False and channel._waitingForTransport is False


def test_the_request_factory_set_on_daphnes_protocol_reaches_its_http_channel():
    from deerflow_site.server.daphne_server import BoundedRequest, _Factory

    class _Server:  # what HTTPFactory keeps; building a protocol reads nothing from it
        pass

    protocol = _Factory(_Server()).buildProtocol(None)
    # Twisted's _GenericHTTPChannelProtocol passes the factory on to the channel it wraps.
    assert protocol.requestFactory is BoundedRequest
    assert protocol._channel.requestFactory is BoundedRequest


SHARED_FD_PORT = """
import socket
from twisted.internet import reactor, tcp
from twisted.internet.endpoints import serverFromString
from twisted.internet.protocol import Factory, Protocol

from daphne.endpoints import build_endpoint_description_strings

listener = socket.create_server(("127.0.0.1", 0))
# What Daphne's --fd makes of the launcher's socket.
(description,) = build_endpoint_description_strings(file_descriptor=listener.fileno())
ports = []
serverFromString(reactor, description).listen(Factory.forProtocol(Protocol)).addCallback(ports.append)
print(type(ports[0]) is tcp.Port)
"""


def test_the_port_daphne_adopts_from_the_shared_socket_is_a_plain_tcp_port():
    # BoundedServer.listen_success turns exactly tcp.Port into _SharedPort; a subclass or
    # wrapper would silently keep Twisted's burst accepts.
    result = subprocess.run([sys.executable, "-c", SHARED_FD_PORT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


REACTOR_LOOP = """
import asyncio
before = type(asyncio.get_event_loop_policy())
import deerflow_site.server.daphne_server
from twisted.internet import asyncioreactor, reactor
print(isinstance(reactor, asyncioreactor.AsyncioSelectorReactor), type(reactor._asyncioEventloop).__module__,
      type(asyncio.get_event_loop_policy()) is before)
"""


def test_daphne_makes_its_reactor_loop_at_import_so_it_is_uvloops():
    pytest.importorskip("uvloop")
    # daphne.server makes its loop and installs Twisted's asyncio reactor on it when first
    # imported; daphne_server.py imports it under uvloop's policy and puts the policy back.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    result = subprocess.run([sys.executable, "-c", REACTOR_LOOP], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "uvloop", "True"]


def test_django_builds_the_middleware_chain_the_handler_replaces():
    from django.core.handlers.base import BaseHandler

    # SyncChainASGIHandler.load_middleware wraps what Django leaves in _middleware_chain.
    assert "self._middleware_chain = handler" in source(BaseHandler.load_middleware)


@pytest.mark.django_db  # close() sends request_finished, which looks at the connections
def test_django_response_close_runs_the_resource_closers_the_chain_appends_to():
    from django.http import HttpResponse

    closed = []
    response = HttpResponse(b"ok")
    response._resource_closers.append(lambda: closed.append(True))
    response.close()
    assert closed == [True] and response.closed


def test_django_atomic_begins_through_the_method_the_backend_defers():
    from django.db.backends.base.base import BaseDatabaseWrapper

    # Django looks the method up by name (hasattr): renamed, the deferred BEGIN is never used.
    autocommit = source(BaseDatabaseWrapper.set_autocommit)
    assert 'hasattr(self, "_start_transaction_under_autocommit")' in autocommit
    assert "self._start_transaction_under_autocommit()" in autocommit


def test_the_orm_converts_row_values_in_the_order_prepared_sql_does():
    from django.db.models.sql.compiler import SQLCompiler

    # prepared_sql.row_converters: the backend's converters, then the field's.
    converters = source(SQLCompiler.get_converters)
    assert "self.connection.ops.get_db_converters(expression)" in converters
    assert "expression.get_db_converters(self.connection)" in converters
    assert "backend_converters + field_converters" in converters


def test_a_new_instance_state_is_what_prepared_inserts_flip():
    from apps.threads.models import Thread

    # ModelInsert.save marks instances saved as Model.save_base does.
    state = Thread()._state
    assert state.adding is True and state.db is None


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="SQLite only")
@pytest.mark.django_db
def test_the_sqlite_options_the_settings_give_take_effect():
    from django.db import connection

    # deerflow_site/settings/database.py: OPTIONS transaction_mode and init_command (Django 5.1+),
    # and the connection parameters the backend reads to place and time its write lock.
    params = connection.get_connection_params()
    assert {"database", "timeout"} <= set(params)
    assert connection.transaction_mode == "IMMEDIATE"
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 1  # NORMAL
