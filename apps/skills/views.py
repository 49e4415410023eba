"""Skills API (shared/API_CONTRACT.md §4): list, read, enable, install, versions, rollback, delete."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.skills import api_types as types
from apps.skills import selectors, services
from deerflow_site.json_input import StrictJSONParser
from harness.skills.install import install_json

READ, WRITE = "threads:read", "threads:write"


def _via_token(request) -> bool:
    # Token callers authenticate with a PersonalAccessToken as request.auth; sessions have none.
    return request.auth is not None


class SkillListView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.SkillList, operation_id="skills_list")
    def get(self, request):
        return Response({"skills": selectors.skill_list(user=request.user)})


class SkillDetailView(APIView):
    token_scopes = {"GET": READ, "PUT": WRITE, "DELETE": WRITE}

    @extend_schema(responses=types.SkillDetail)
    def get(self, request, name):
        return Response(selectors.skill_detail(user=request.user, name=name))

    @extend_schema(request=types.SkillEnable, responses={200: types.Skill, 409: types.SkillHeld})
    def put(self, request, name):
        body = request.data if isinstance(request.data, dict) else {}
        enabled, acknowledge = body.get("enabled"), body.get("acknowledge_findings", False)
        if not isinstance(enabled, bool):
            raise InvalidRequest("enabled must be true or false")
        if not isinstance(acknowledge, bool):
            raise InvalidRequest("acknowledge_findings must be true or false")
        try:
            services.skill_set_enabled(user=request.user, name=name, enabled=enabled, acknowledge_findings=acknowledge,
                                       via_token=_via_token(request))
        except services.SkillHeld as exc:
            return Response({"detail": exc.detail, "held": True, "findings": exc.findings}, status=409)
        return Response(selectors.skill_dict_for_user(user=request.user, name=name))

    @extend_schema(responses={204: None})
    def delete(self, request, name):
        """``?scope=global`` (admins) deletes the skill installed for everyone."""
        services.skill_delete(user=request.user, name=name, scope=request.query_params.get("scope"),
                              via_token=_via_token(request))
        return Response(status=204)


class SkillInstallView(APIView):
    """JSON ``{thread_id, path}`` (a file in one of the user's threads) or multipart ``file``;
    either with ``scope``: ``user`` (default) or ``global`` (for everyone; admins only)."""

    token_scopes = {"POST": WRITE}
    parser_classes = [StrictJSONParser, MultiPartParser]

    @extend_schema(request={"application/json": types.SkillInstallFromThread, "multipart/form-data": types.SkillInstallUpload},
                   responses={200: types.SkillInstalled, 422: types.SkillRefused})
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        # Checked before the archive is scanned: a refused scope costs no scan and writes nothing.
        scope = services.check_install_scope(user=request.user, scope=body.get("scope"), via_token=_via_token(request))
        try:
            upload = request.FILES.get("file")
            if upload is not None:
                installed = services.skill_install_upload(user=request.user, upload=upload, scope=scope)
            else:
                thread_id, path = body.get("thread_id"), body.get("path")
                if not isinstance(thread_id, str) or not isinstance(path, str):
                    raise InvalidRequest("send a multipart 'file', or JSON {thread_id, path}")
                installed = services.skill_install_from_thread(user=request.user, thread_id=thread_id, path=path, scope=scope)
        except services.SkillRefused as exc:
            return Response({"detail": exc.detail, "success": False, "findings": exc.findings}, status=422)
        return Response(install_json(installed.result, scope=scope, held=installed.held))


class SkillRollbackView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=types.SkillRollback, responses=types.SkillRolledBack)
    def post(self, request, name):
        body = request.data if isinstance(request.data, dict) else {}
        version_id = body.get("version")
        if version_id is not None and not isinstance(version_id, str):
            raise InvalidRequest("version must be a version id from the versions list")
        version = services.skill_rollback(user=request.user, name=name, version_id=version_id, scope=body.get("scope"),
                                          via_token=_via_token(request))
        return Response({"success": True, "skill_name": name, "version": version, "message": f"Skill '{name}' rolled back."})


class SkillVersionsView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.SkillVersions)
    def get(self, request, name):
        return Response({"versions": selectors.skill_detail(user=request.user, name=name)["versions"]})


class SkillRevisionRestoreView(APIView):
    """Undo one change of the agent's to the user's own skill (its history, ``skill_manage``)."""

    token_scopes = {"POST": WRITE}

    @extend_schema(request=None, responses={200: types.SkillRestored, 422: types.SkillRefused})
    def post(self, request, name, revision_id):
        try:
            row = services.skill_revision_restore(user=request.user, name=name, revision_id=revision_id)
        except services.SkillRefused as exc:
            return Response({"detail": exc.detail, "success": False, "findings": exc.findings}, status=422)
        return Response({"success": True, "skill_name": name, "revision": row.pk, "file_path": row.file_path,
                         "message": f"Restored {row.file_path} of '{name}'."})
