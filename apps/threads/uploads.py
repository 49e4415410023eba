"""Thread uploads for the API, the channels and the startup sweep: the writer itself lives in
``harness.uploads.files`` so that the embedded ``DeerFlowClient`` writes uploads the same way."""

from harness.uploads.files import (IncomingFile, companion_name, convert_to_markdown, delete_upload, list_uploads,
                                   sweep_staging_files, upload_files, upload_limits, uploads_dir, validate_upload_name)

__all__ = ["IncomingFile", "companion_name", "convert_to_markdown", "delete_upload", "list_uploads", "sweep_staging_files",
           "upload_files", "upload_limits", "uploads_dir", "validate_upload_name"]
