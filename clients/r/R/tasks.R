# Bipartite networks and label sets (POST /train with a task; /kernel, /predict, /evaluate
# of such models).
#
#   fit <- ok_train_bipartite(cl, drugs, targets, edges = interactions, wait = TRUE)
#   out <- ok_kernel_bipartite(cl, fit$model_id, rows = new_drugs, top_k = 5)
#   out$edges$new_rows_ids     # data.frame(row, col) of ids, best first per new drug
#   fit <- ok_train_multilabel(cl, X, labels, wait = TRUE)   # labels: 0/1 matrix or data.frame
#   ok_predict_labels(cl, fit$model_id, X_new)$label_sets
#
# A side is a numeric matrix or a data.frame with an id column (its features), or
# list(similarity = S, ids = ...) (its similarity to the training vertices of that side).
# Pairs are (row, column): 1-based row numbers, or ids (a character matrix or data.frame).
# Tables labelled by id (row and column names, as read.delim(path, row.names = 1) reads a
# published matrix) are matched by id: an adjacency to the sides, a similarity's columns to
# its rows at training and to the model's training vertices after.

# One vertex set as the service takes it; `training`: a similarity is the square one among
# the side's vertices.
as_side <- function(x, name, training = FALSE) {
  if (is.null(x)) {
    return(NULL)
  }
  if (is.list(x) && !is.data.frame(x)) {
    if (!is.null(x$similarity)) {
      s <- labelled_similarity(x$similarity, x$ids, paste0(name, "$similarity"), training)
      return(drop_null(list(
        similarity = s$similarity, ids = as_ids(s$ids), similarity_ids = as_ids(s$columns)
      )))
    }
    table <- as_table(x$inputs, x$ids, paste0(name, "$inputs"))
  } else {
    # a features table labelled by id: its id column, or text row names (a matrix: its row
    # names), as read.delim(path, row.names = 1) reads it
    labelled <- as_labelled(x, name)
    if (!is.null(labelled$rows)) check_ids(labelled$rows, nrow(labelled$values), name)
    table <- list(inputs = labelled$values, ids = labelled$rows)
  }
  drop_null(list(inputs = table$inputs, ids = as_ids(table$ids)))
}

# (similarity, ids, column ids) of a similarity labelled by id (`as_labelled`: names of
# its rows and of its columns): its row names give the side's ids; at `training` its columns
# are put in its rows' order by id, else their names go as `similarity_ids`, matched by the
# service to the model's training vertices. Anything else is sent as it is, with `ids`.
labelled_similarity <- function(x, ids, name, training) {
  table <- as_labelled(x, name)
  rows <- table$rows
  cols <- table$cols
  if (is.null(rows) || is.null(cols)) {
    return(list(similarity = table$values, ids = ids))
  }
  if (!is.null(ids)) {
    input_error("%s: give the ids as its row names (or id column) or as `ids`, not both", name)
  }
  if (!training) {
    return(list(similarity = table$values, ids = rows, columns = cols))
  }
  if (length(rows) != length(cols) || anyDuplicated(rows) || !setequal(rows, cols)) {
    input_error(paste(
      "%s: a labelled similarity names the same items once each in its row names and its",
      "column names, in any order (read.csv and read.delim change ids such as \"hsa:10\"",
      "in a header unless check.names = FALSE)"
    ), name)
  }
  list(similarity = table$values[, match(rows, cols), drop = FALSE], ids = rows)
}

# [row, column] pairs: ids as they are, 1-based row numbers sent 0-based.
as_pairs <- function(pairs, name, n_rows, n_cols) {
  pairs <- edge_matrix(pairs, name)
  if (is.character(pairs)) {
    return(pairs)
  }
  as_edges_in(pairs, name, n_rows, n_cols)
}

# [row, column, score] rows of an answer as a data.frame with 1-based row and col; id pairs
# as a data.frame of ids.
as_scored_pairs <- function(rows, ids = FALSE) {
  e <- as_edges(rows, ids)
  names(e)[1:2] <- c("row", "col")
  e
}

# The K x K CV spec as JSON wants it, every field passed on (row_folds, col_folds too): the
# fold assignments stay arrays, and folds one when it has two values (K_rows, K_cols).
as_bipartite_cv <- function(cv) {
  if (is.null(cv)) {
    return(NULL)
  }
  if (length(cv$folds) > 1) cv$folds <- I(cv$folds)
  for (key in intersect(names(cv), c("row_folds", "col_folds"))) cv[[key]] <- I(cv[[key]])
  cv
}

#' Train on a bipartite network (POST /train, task "bipartite").
#'
#' @param rows,cols each side: a numeric matrix or a data.frame with an id column (features),
#'   or `list(similarity = S, ids = ids)` (the n x n similarity among its vertices; S
#'   labelled by id, row and column names in any order, gives the ids and its columns are
#'   matched to its rows).
#' @param edges interactions: a two-column matrix of 1-based (row, column) numbers, or of ids.
#' @param adjacency interactions as an n_rows x n_cols matrix (0/1 or weights; NA: an unknown
#'   pair), instead. Labelled by id (a matrix's row and column names; a data.frame's column
#'   names and its id column or text row names, as `read.delim(path, row.names = 1,
#'   check.names = FALSE)` reads a published matrix), its rows and columns are matched to
#'   the sides' ids in any order (`adjacency_row_ids`, `adjacency_col_ids`); a side without
#'   ids takes them. A data.frame's own row numbers (1, 2, ...) are not ids.
#' @param unknown_pairs pairs of unknown interaction (not negatives), as `edges`.
#' @param cv optional K x K cross-validation first, e.g. `list(folds = c(4, 3))`, with
#'   `random_state`, or given fold assignments `row_folds` / `col_folds` (fold ids 0..K-1,
#'   one per vertex, as the service takes them).
#' @param model "auto" (okcore's default, a rank average of bipartite models; no `params`) or
#'   an estimator name.
#' @export
ok_train_bipartite <- function(client, rows, cols, edges = NULL, adjacency = NULL,
                               model = "auto", params = list(), new_pairs = "two-step",
                               cv = NULL, name = NULL, wait = FALSE, unknown_pairs = NULL) {
  r <- as_side(rows, "rows", training = TRUE)
  c <- as_side(cols, "cols", training = TRUE)
  size <- function(side) nrow(if (is.null(side$inputs)) side$similarity else side$inputs)
  a <- if (!is.null(adjacency)) as_labelled(adjacency, "adjacency")
  body <- list(
    task = "bipartite", rows = r, cols = c,
    edges = if (!is.null(edges)) as_pairs(edges, "edges", size(r), size(c)),
    adjacency = a$values, adjacency_row_ids = as_ids(a$rows), adjacency_col_ids = as_ids(a$cols),
    unknown_pairs = if (!is.null(unknown_pairs)) {
      as_pairs(unknown_pairs, "unknown_pairs", size(r), size(c))
    },
    model = model, params = if (length(params)) params, new_pairs = new_pairs,
    cv = as_bipartite_cv(cv),
    name = name, wait = wait
  )
  ok_request(client, "POST", "/train", body)
}

#' Scores and ranked edges of new vertices of a bipartite model (POST /kernel).
#'
#' @param rows new row vertices (features, or `list(similarity = S, ids = ...)` with S their
#'   similarity to the training rows; S labelled by id gives the ids by its row names and
#'   names the training rows by its column names, in any order), scored against the known
#'   columns; `cols` likewise.
#'   Both: new rows x new columns too.
#' @return a list: `scores` (matrices `new_rows` q x n_cols, `new_cols` n_rows x q',
#'   `new_pairs` q x q') and, with `threshold` / `top_k`, `edges`: data.frames (row, col,
#'   score) of 1-based rows and columns per block, best first per new vertex, and
#'   `<block>_ids` (row, col) by id.
#' @export
ok_kernel_bipartite <- function(client, model_id, rows = NULL, cols = NULL, threshold = NULL,
                                top_k = NULL, return_scores = TRUE) {
  body <- list(
    model_id = model_id, rows = as_side(rows, "rows"), cols = as_side(cols, "cols"),
    threshold = threshold, top_k = top_k, return_scores = return_scores
  )
  out <- ok_request(client, "POST", "/kernel", body, npz_answer = TRUE)
  if (!is.null(out$scores)) out$scores <- lapply(out$scores, function(s) as.matrix(s))
  if (!is.null(out$edges)) {
    kept <- Filter(Negate(is.null), out$edges)
    out$edges <- sapply(names(kept), function(key) {
      as_scored_pairs(kept[[key]], ids = endsWith(key, "_ids"))
    }, simplify = FALSE)
  }
  out
}

#' AUROC and average precision of a bipartite model per block and pooled (POST /evaluate).
#'
#' @param new_rows true (new row, training column) pairs, 1-based; `new_cols` (training row,
#'   new column); `new_pairs` (new row, new column); `by_id` (row id, column id) pairs of any
#'   block. Pairs not listed do not interact.
#' @param unknown_pairs pairs of unknown interaction, a list with the same names
#'   (`list(by_id = ...)`): left out of every score (`n_unknown` per block).
#' @export
ok_evaluate_bipartite <- function(client, model_id, rows = NULL, cols = NULL, new_rows = NULL,
                                  new_cols = NULL, new_pairs = NULL, by_id = NULL,
                                  unknown_pairs = NULL) {
  r <- as_side(rows, "rows")
  c <- as_side(cols, "cols")
  size <- function(side) {
    if (is.null(side)) 0L else nrow(if (is.null(side$inputs)) side$similarity else side$inputs)
  }
  given <- c(list(new_rows, new_cols), unknown_pairs[c("new_rows", "new_cols")])
  model <- if (any(!vapply(given, is.null, TRUE))) ok_model(client, model_id)$bipartite
  pairs <- function(p, where) {
    drop_null(list(
      new_rows = if (!is.null(p$new_rows)) {
        as_pairs(p$new_rows, paste0(where, "new_rows"), size(r), model$n_cols)
      },
      new_cols = if (!is.null(p$new_cols)) {
        as_pairs(p$new_cols, paste0(where, "new_cols"), model$n_rows, size(c))
      },
      new_pairs = if (!is.null(p$new_pairs)) {
        as_pairs(p$new_pairs, paste0(where, "new_pairs"), size(r), size(c))
      },
      by_id = if (!is.null(p$by_id)) edge_matrix(p$by_id, paste0(where, "by_id"))
    ))
  }
  edges <- pairs(list(new_rows = new_rows, new_cols = new_cols, new_pairs = new_pairs,
                      by_id = by_id), "")
  unknown <- if (!is.null(unknown_pairs)) pairs(unknown_pairs, "unknown_pairs.")
  ok_request(client, "POST", "/evaluate", drop_null(list(model_id = model_id, rows = r,
                                                         cols = c, edges = edges,
                                                         unknown_pairs = unknown)))
}

#' Train on label sets (POST /train, task "multilabel").
#'
#' @param labels N x L 0/1 matrix or data.frame (its column names, when it has them, name the
#'   labels).
#' @param model NULL: the server's default ("auto", okcore's stacked
#'   MultiLabelClassifier(), which takes no `params`); or an estimator's name.
#' @param threshold "cv" (chosen by inner cross-validation for `metric`, one for all labels
#'   or `per_label`) or a number in (0, 1).
#' @param per_label,scores NULL: the server's defaults.
#' @param max_cpu_seconds NULL (no budget) or a CPU budget in seconds for the fit.
#' @export
ok_train_multilabel <- function(client, inputs, labels, label_names = NULL, ids = NULL,
                                model = NULL, params = list(), threshold = "cv",
                                per_label = NULL, metric = "micro_f1", scores = NULL,
                                n_splits = 3, random_state = 0, name = NULL, wait = FALSE,
                                max_cpu_seconds = NULL) {
  table <- as_table(inputs, ids)
  if (is.null(label_names)) label_names <- colnames(labels)
  body <- list(
    task = "multilabel", inputs = table$inputs, ids = as_ids(table$ids),
    labels = as_table(labels, name = "labels")$inputs,
    label_names = if (!is.null(label_names)) I(as.character(label_names)),
    model = model, params = if (length(params)) params, threshold = threshold,
    per_label = per_label, metric = metric, scores = scores, n_splits = n_splits,
    random_state = random_state, name = name, wait = wait, max_cpu_seconds = max_cpu_seconds
  )
  ok_request(client, "POST", "/train", body)
}

#' Label scores and label sets of a multi-label model (POST /predict).
#'
#' @return a list: `probabilities` (Q x L in [0, 1]), `labels` (Q x L 0/1), `thresholds`,
#'   `label_names` and `label_sets` (a list of Q character vectors, each row's labels by
#'   name) when the labels have names.
#' @param metric NULL, or the measure whose thresholds (chosen at training) decide the
#'   label sets.
#' @export
ok_predict_labels <- function(client, model_id, inputs, ids = NULL, metric = NULL) {
  table <- as_table(inputs, ids)
  body <- list(model_id = model_id, inputs = table$inputs, ids = as_ids(table$ids),
               metric = metric)
  client$binary <- FALSE # label sets are lists of names: JSON
  out <- ok_request(client, "POST", "/predict", body)
  q <- nrow(table$inputs)
  out$probabilities <- matrix(out$probabilities, nrow = q)
  out$labels <- matrix(as.integer(out$labels), nrow = q)
  if (!is.null(out$label_sets)) out$label_sets <- row_list(out$label_sets, q)
  out
}

# Each row's label names as a list of q character vectors: jsonlite makes a matrix of rows
# holding as many labels each (then `[[i]]` would be one name, not row i's set).
row_list <- function(sets, q) {
  if (is.matrix(sets)) {
    return(lapply(seq_len(q), function(i) as.character(sets[i, ])))
  }
  lapply(sets, function(set) as.character(unlist(set)))
}

#' Multi-label measures against the true 0/1 label rows (POST /evaluate): Hamming loss,
#' subset accuracy, micro- and macro-F1, ranking loss, one-error, coverage, label-ranking
#' average precision. `label_names` (or the column names of a data frame or matrix) name the
#' columns of `labels`: they are matched to the model's labels by name, in any order.
#' @export
ok_evaluate_labels <- function(client, model_id, inputs, labels, metric = NULL,
                               label_names = NULL) {
  if (is.null(label_names)) label_names <- colnames(labels)
  body <- list(
    model_id = model_id, inputs = as_table(inputs)$inputs,
    outputs = as_table(labels, name = "labels")$inputs, metric = metric,
    output_columns = if (!is.null(label_names)) I(as.character(label_names))
  )
  ok_request(client, "POST", "/evaluate", body)
}
