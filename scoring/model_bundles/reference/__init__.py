"""The reference model bundle's source: ``predict.py`` is zipped alone at the root of the bundle
(``scoring.model_bundles.build.build_reference_bundle``); this file only makes the folder ship
with the package."""
