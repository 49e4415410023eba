from django.urls import path

from apps.skills import views

urlpatterns = [
    path("skills", views.SkillListView.as_view(), name="skill-list"),
    path("skills/install", views.SkillInstallView.as_view(), name="skill-install"),
    path("skills/<str:name>", views.SkillDetailView.as_view(), name="skill-detail"),
    path("skills/<str:name>/versions", views.SkillVersionsView.as_view(), name="skill-versions"),
    path("skills/<str:name>/rollback", views.SkillRollbackView.as_view(), name="skill-rollback"),
    path("skills/<str:name>/history/<int:revision_id>/restore", views.SkillRevisionRestoreView.as_view(), name="skill-revision-restore"),
]
