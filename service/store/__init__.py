"""The model store on disk: model folders and their records, model ids, archives
(export / import) and the pagination of stored listings."""
