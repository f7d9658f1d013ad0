# Client of the okboost REST service (httr2 + jsonlite).
#
#   cl  <- okboost_client("http://127.0.0.1:8000")
#   fit <- ok_train(cl, X, list(type = "diffusion", beta = 1, edges = E),
#                   params = list(n_estimators = 100))
#   ok_wait(cl, fit$job_id)
#   out <- ok_kernel(cl, fit$model_id, X_new, top_k = 5)
#   out$edges$new_known   # data.frame(a, b, score)
#
# Rows and vertices are numbered from 1, as R indexes: training edges are pairs of rows of
# the training inputs (1..N), and the edges and pre-image indices in the answers are 1-based
# rows too (the service itself counts from 0; the client converts both ways).
# Numeric matrices travel as raw little-endian binary parts of a multipart request, and the
# answers of /kernel and /predict come back as .npz archives (binary = FALSE: JSON both
# ways; the results are the same); integer matrices (edges) go as 32-bit integers.
# Vertex ids: ok_train(cl, X, list(type = "diffusion", edges = E_by_id), ids = ids) with
# E_by_id a two-column character matrix of ids; the answers then name vertices by id too
# (edges$new_known_ids, index_ids).
# Tables: inputs may be a data.frame whose id column ("id", or the first non-numeric
# column) gives the ids, and edges a two-column data.frame (ids, or 1-based rows).
# Held-out scores: ok_evaluate(cl, model_id, X_test, new_known = E_test) (AUCs,
# precision at k; Err^phi and Err^Y with the true outputs).

#' A connection to an okboost service.
#'
#' @param url base URL of the service.
#' @param token bearer token, if the service requires one.
#' @param timeout seconds before a request is abandoned.
#' @param binary send matrices as binary parts and read /kernel and /predict answers as
#'   .npz (TRUE), or use JSON both ways (FALSE).
#' @export
okboost_client <- function(url = Sys.getenv("OKBOOST_URL", "http://127.0.0.1:8000"),
                           token = Sys.getenv("OKBOOST_TOKEN"), timeout = 300,
                           binary = TRUE) {
  structure(
    list(
      url = sub("/+$", "", url),
      token = if (is.null(token) || !nzchar(token)) NULL else token,
      timeout = timeout,
      binary = binary
    ),
    class = "okboost_client"
  )
}

#' @export
print.okboost_client <- function(x, ...) {
  cat("<okboost_client ", x$url, if (!is.null(x$token)) " (token)", ">\n", sep = "")
  invisible(x)
}

okboost_error <- function(status, code, message, details = list()) {
  structure(
    class = c("okboost_error", "error", "condition"),
    list(
      message = sprintf("%d %s: %s", status, code, message),
      call = NULL, status = status, code = code, details = details
    )
  )
}

drop_null <- function(x) x[!vapply(x, is.null, logical(1))]

# Numeric (or integer) matrices of `body`, up to two levels deep, as binary parts named by
# their path ("inputs", "output_kernel.edges"); returns the JSON rest and the parts.
split_matrices <- function(body, prefix = "") {
  plain <- list()
  parts <- list()
  for (key in names(body)) {
    value <- body[[key]]
    path <- paste0(prefix, key)
    if (is.matrix(value) && (is.numeric(value) || is.integer(value))) {
      parts[[path]] <- value
    } else if (prefix == "" && is.list(value) && !is.null(names(value))) {
      inner <- split_matrices(value, paste0(path, "."))
      # a list whose members all became parts is still a JSON object, not []
      plain[[key]] <- if (length(inner$plain)) inner$plain else setNames(list(), character())
      parts <- c(parts, inner$parts)
    } else {
      plain[[key]] <- value
    }
  }
  list(plain = plain, parts = parts)
}

# NA and NaN become null, JSON's missing value (jsonlite's default writes numbers' NA as the
# text "NA", which the service refuses)
to_json <- function(x) {
  jsonlite::toJSON(
    x, auto_unbox = TRUE, digits = NA, null = "null", na = "null", matrix = "rowmajor"
  )
}

multipart_fields <- function(plain, parts, dir) {
  fields <- list(json = as.character(to_json(plain)))
  for (path in names(parts)) {
    m <- parts[[path]]
    file <- file.path(dir, paste0(path, ".bin"))
    con <- file(file, "wb")
    if (is.integer(m)) {
      writeBin(as.integer(t(m)), con, size = 4, endian = "little")
      dtype <- "<i4"
    } else {
      writeBin(as.double(t(m)), con, size = 8, endian = "little")
      dtype <- "<f8"
    }
    close(con)
    fields[[path]] <- curl::form_file(file, type = "application/octet-stream")
    fields[[paste0(path, ".shape")]] <- paste(dim(m), collapse = ",")
    fields[[paste0(path, ".dtype")]] <- dtype
  }
  fields
}

ok_request <- function(client, method, path, body = NULL, npz_answer = FALSE, archive = NULL,
                       save_to = NULL, simplify = TRUE) {
  req <- httr2::request(paste0(client$url, path))
  req <- httr2::req_method(req, method)
  req <- httr2::req_timeout(req, client$timeout)
  req <- httr2::req_error(req, is_error = function(resp) FALSE)
  dir <- tempfile("okboost-")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  if (!is.null(client$token)) req <- httr2::req_auth_bearer_token(req, client$token)
  if (client$binary && npz_answer) req <- httr2::req_headers(req, Accept = NPZ)
  if (!is.null(archive)) {
    req <- httr2::req_body_file(req, archive, type = ARCHIVE)
  } else if (!is.null(body)) {
    split <- split_matrices(drop_null(body))
    if (client$binary && length(split$parts) > 0) {
      fields <- multipart_fields(split$plain, split$parts, dir)
      req <- do.call(httr2::req_body_multipart, c(list(req), fields))
    } else {
      req <- httr2::req_body_raw(req, as.character(to_json(drop_null(body))), "application/json")
    }
  }
  resp <- httr2::req_perform(req)
  status <- httr2::resp_status(resp)
  if (status < 400 && identical(httr2::resp_content_type(resp), NPZ)) {
    return(read_npz(httr2::resp_body_raw(resp), dir))
  }
  if (status < 400 && !is.null(save_to)) {
    writeBin(httr2::resp_body_raw(resp), save_to)
    return(invisible(save_to))
  }
  text <- httr2::resp_body_string(resp)
  data <- if (nzchar(text)) {
    tryCatch(jsonlite::fromJSON(text, simplifyVector = simplify), error = function(e) NULL)
  }
  if (status < 400) {
    return(data)
  }
  err <- if (is.list(data)) data$error else NULL
  stop(okboost_error(
    status,
    if (is.null(err$code)) "http_error" else err$code,
    if (is.null(err$message)) substr(text, 1, 500) else err$message,
    if (is.null(err$details)) list() else err$details
  ))
}

NPZ <- "application/x-npz"
ARCHIVE <- "application/gzip"

# One .npy file (format 1, 2 or 3, little-endian float64, int64, bool or unicode, C order):
# a scalar, a vector, a matrix or an array (row-major on disk).
read_npy <- function(path) {
  con <- file(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "raw", 8)
  if (!identical(magic[2:6], charToRaw("NUMPY"))) stop(path, " is not a .npy file")
  header_length <- readBin(con, "integer", 1, size = if (magic[7] == 1) 2 else 4,
                           signed = magic[7] != 1, endian = "little")
  header <- rawToChar(readBin(con, "raw", header_length))
  descr <- sub(".*'descr': *'([^']+)'.*", "\\1", header)
  dims <- sub(".*'shape': *\\(([^)]*)\\).*", "\\1", header)
  shape <- as.integer(Filter(nzchar, trimws(strsplit(dims, ",")[[1]])))
  if (grepl("'fortran_order': *True", header)) stop(path, ": Fortran order")
  n <- prod(shape)
  values <- switch(substr(descr, 1, 2),
    "<f" = readBin(con, "double", n, size = 8, endian = "little"),
    "<i" = readBin(con, "integer", n, size = 8, endian = "little"),
    "|b" = as.logical(readBin(con, "integer", n, size = 1)),
    "<U" = {
      width <- as.integer(substring(descr, 3))
      points <- matrix(readBin(con, "integer", n * width, size = 4, endian = "little"), width)
      apply(points, 2, function(cp) intToUtf8(cp[cp > 0]))
    },
    stop(path, ": unsupported dtype ", descr)
  )
  if (length(shape) < 2) {
    return(values)
  }
  # row-major on disk: fill the reversed shape, then reverse the axes (as fromJSON nests)
  aperm(array(values, rev(shape)), rev(seq_along(shape)))
}

# A binary answer: members named by their dotted path in the JSON answer, nested as
# fromJSON would nest them.
read_npz <- function(content, dir) {
  archive <- file.path(dir, "answer.npz")
  writeBin(content, archive)
  members <- utils::unzip(archive, list = TRUE)$Name
  utils::unzip(archive, exdir = file.path(dir, "answer"))
  out <- list()
  for (member in members) {
    value <- read_npy(file.path(dir, "answer", member))
    path <- strsplit(sub("[.]npy$", "", member), ".", fixed = TRUE)[[1]]
    if (length(path) == 1) {
      out[[path]] <- value
    } else {
      if (is.null(out[[path[1]]])) out[[path[1]]] <- list()
      out[[path[1]]][[path[2]]] <- value
    }
  }
  out
}

# [a, b, score] rows (0-based) as a data.frame with 1-based a and b; [a, b] id pairs as is.
as_edges <- function(rows, ids = FALSE) {
  if (ids) {
    if (length(rows) == 0) {
      return(data.frame(a = character(), b = character()))
    }
    rows <- matrix(rows, ncol = 2)
    return(data.frame(a = rows[, 1], b = rows[, 2]))
  }
  if (length(rows) == 0) {
    return(data.frame(a = integer(), b = integer(), score = numeric()))
  }
  rows <- matrix(rows, ncol = 3)
  data.frame(a = as.integer(rows[, 1]) + 1L, b = as.integer(rows[, 2]) + 1L, score = rows[, 3])
}

# ids stay a JSON array even when there is one (jsonlite unboxes length-1 vectors)
as_ids <- function(ids) if (!is.null(ids)) I(as.character(ids))

input_error <- function(...) stop(sprintf(...), call. = FALSE)

# The id column of a data.frame: "id" when there is one, else the first non-numeric column.
id_column <- function(x) {
  if ("id" %in% names(x)) {
    return("id")
  }
  numeric <- vapply(x, is_number_column, logical(1))
  if (all(numeric)) NULL else names(x)[which(!numeric)[1]]
}

# A data frame column sent as numbers: numeric, or logical (TRUE / FALSE as 1 / 0, as R's
# model.matrix takes them: label columns often are).
is_number_column <- function(col) is.numeric(col) || is.logical(col)

# Inputs as the service takes them: a numeric matrix, and the ids from a data.frame's id
# column (or `ids`; not both). Positions in messages count from 1.
as_table <- function(x, ids = NULL, name = "inputs") {
  if (is.data.frame(x)) {
    id <- id_column(x)
    if (!is.null(id)) {
      if (!is.null(ids)) {
        input_error("%s: give the ids as its id column '%s' or as `ids`, not both", name, id)
      }
      ids <- as.character(x[[id]])
      x <- x[setdiff(names(x), id)]
    }
    if (!ncol(x)) input_error("%s: no numeric column besides the id column", name)
    numeric <- vapply(x, is_number_column, logical(1))
    if (!all(numeric)) {
      col <- names(x)[which(!numeric)[1]]
      input_error(
        "%s: column '%s' is not numeric (value in row 1: %s); only one column may hold ids",
        name, col, format(x[[col]][1])
      )
    }
    x <- as.matrix(x)
  }
  if (is.null(dim(x))) x <- matrix(x, nrow = 1)
  storage.mode(x) <- "double"
  # NA and NaN are missing values (sent as NaN, or null in JSON): the service says which
  # models and fields take them; an infinite value never is one
  bad <- which(is.infinite(x), arr.ind = TRUE)
  if (length(bad)) {
    first <- bad[order(bad[, 1], bad[, 2])[1], ]
    input_error(
      "%s row %d, column %d is %s: the service takes finite numbers (NA for a missing value)",
      name, first[[1]], first[[2]], format(x[first[[1]], first[[2]]])
    )
  }
  if (!is.null(ids)) check_ids(ids, nrow(x), name)
  list(inputs = unname(x), ids = ids)
}

# A table labelled by id, as the service matches it: its numbers, and the ids naming its
# rows and its columns (NULL where it has none). A matrix: its row and column names. A
# data.frame: its id column (as in `as_table`) or its row names when they are text (the
# row numbers R gives a data.frame, 1, 2, ..., and those a subset keeps, are positions, not
# ids), and the names of its other columns.
as_labelled <- function(x, name) {
  table <- as_table(x, NULL, name)
  if (!is.data.frame(x)) {
    return(list(values = table$inputs, rows = rownames(x), cols = colnames(x)))
  }
  rows <- table$ids
  named <- attr(x, "row.names")
  if (is.character(named)) {
    if (!is.null(rows)) {
      input_error("%s: give the row ids as its id column or as its row names, not both", name)
    }
    rows <- named
  }
  cols <- names(x)
  id <- id_column(x)
  if (!is.null(id)) cols <- cols[cols != id]
  list(values = table$inputs, rows = rows, cols = cols)
}

# One unique, non-missing id per row; positions in messages count from 1.
check_ids <- function(ids, n, name) {
  if (length(ids) != n) {
    input_error("%d ids for the %d rows of %s: give one per row", length(ids), n, name)
  }
  missing <- which(is.na(ids) | !nzchar(as.character(ids)))
  if (length(missing)) input_error("id %d (of %s's rows) is missing or empty", missing[1], name)
  again <- which(duplicated(ids))
  if (length(again)) {
    first <- match(ids[again[1]], ids)
    input_error("id %d (\"%s\") repeats id %d: ids are unique", again[1], ids[again[1]], first)
  }
}

as_inputs <- function(x) as_table(x)$inputs

# Edges as a two-column matrix: numbers (rows), or characters (ids) when a column of a
# data.frame is not numeric; a vector is one edge.
edge_matrix <- function(edges, name) {
  if (is.data.frame(edges)) {
    if (ncol(edges) != 2) {
      input_error("%s must have two columns (the two vertices), not %d", name, ncol(edges))
    }
    edges <- if (all(vapply(edges, is.numeric, logical(1)))) {
      as.matrix(edges)
    } else {
      cbind(as.character(edges[[1]]), as.character(edges[[2]]))
    }
  }
  if (is.null(dim(edges))) edges <- matrix(edges, ncol = 2, byrow = TRUE)
  if (ncol(edges) != 2) {
    input_error("%s must have two columns (the two vertices), not %d", name, ncol(edges))
  }
  unname(edges)
}

# Edges as the service takes them: ids stay as they are; numbers are 1-based rows, checked
# against 1..n_a (first column) and 1..n_b (second) and sent 0-based as integers.
as_edges_in <- function(edges, name, n_a, n_b = n_a) {
  edges <- edge_matrix(edges, name)
  if (is.character(edges)) {
    return(edges)
  }
  whole <- !is.na(edges) & edges == round(edges)
  bound <- cbind(rep(n_a, nrow(edges)), rep(n_b, nrow(edges)))
  bad <- which(!whole | edges < 1 | edges > bound, arr.ind = TRUE)
  if (length(bad)) {
    first <- bad[order(bad[, 1], bad[, 2])[1], ]
    row <- first[[1]]
    value <- edges[row, first[[2]]]
    limit <- bound[row, first[[2]]]
    input_error(
      "%s row %d = (%s, %s): %s is not a vertex: rows count from 1 to %d",
      name, row, format(edges[row, 1]), format(edges[row, 2]), format(value), limit
    )
  }
  storage.mode(edges) <- "integer"
  edges - 1L
}

#' Train a model (POST /train); answers at once with `model_id` and `job_id`.
#'
#' @param inputs N x p numeric matrix (or data.frame).
#' @param output_kernel a list such as `list(type = "diffusion", beta = 1, edges = E)` with
#'   `E` a two-column matrix of 1-based rows of `inputs`, `list(type = "precomputed",
#'   gram = K)`, or `list(type = "rbf", outputs = Y, sigma = 1)`.
#'   With `ids`, `edges` may be a two-column character matrix of ids.
#' @param model an estimator of the server's registry (`"auto"`, `"okboost"`, `"ok3"`,
#'   `"ok3-forest"`, `"krr-boost"`, `"krr"`); NULL (the default): the server's default, the
#'   automatic choice where it applies.
#' @param params estimator parameters, e.g. `list(n_estimators = 200, max_splits = 8)`.
#' @param ids optional vertex ids: one unique string per row of `inputs` (or the id column
#'   of a data.frame `inputs`).
#' @param cv optional K-fold cross-validation before the final fit, e.g.
#'   `list(folds = 5, grid = list(max_splits = c(2, 8)), scoring = "auc",
#'   random_state = 0)`: every grid combination is cross-validated, the best is fitted on
#'   all rows, and `ok_model(cl, id)$cv` holds the table. Any score name of the service's
#'   `cv.scoring` (e.g. `c("f1", "ranking_loss")` for 0/1 label rows) and
#'   `search = "halving"` (candidates raced over `n_estimators`) pass as given.
#' @param ... further fields of the request (e.g. `eval_set`, or `sample_weight`: one
#'   weight >= 0 per row of `inputs`, the loss a weighted sum).
#' @export
ok_train <- function(client, inputs, output_kernel, model = NULL, params = list(),
                     name = NULL, ids = NULL, wait = FALSE, cv = NULL, ...) {
  table <- as_table(inputs, ids)
  if (!is.null(output_kernel$edges)) {
    output_kernel$edges <- as_edges_in(
      output_kernel$edges, "output_kernel$edges", nrow(table$inputs)
    )
  }
  extra <- list(...)
  # one weight per row / output column: a JSON array even when there is one
  for (key in intersect(names(extra), c("sample_weight", "output_weight"))) {
    extra[[key]] <- I(as.double(extra[[key]]))
  }
  body <- c(list(
    inputs = table$inputs, output_kernel = output_kernel, model = model,
    params = if (length(params)) params, name = name, ids = as_ids(table$ids), wait = wait,
    cv = as_cv(cv)
  ), extra)
  ok_request(client, "POST", "/train", body)
}

# The CV spec as JSON wants it: grid values stay arrays even when there is one.
as_cv <- function(cv) {
  if (is.null(cv)) {
    return(NULL)
  }
  if (!is.null(cv$grid)) cv$grid <- lapply(cv$grid, function(values) I(values))
  cv
}

flag <- function(x) if (isTRUE(x)) "true" else "false"

# Every item of a paginated list (GET /models, /jobs), following next_cursor, as one
# data.frame: the items of every page are simplified together, as one page's would be
# (binding each page's data.frame failed when a field's type differed between pages, e.g.
# params$early_stopping "auto" on one page and FALSE on the next).
ok_pages <- function(client, path, key, query) {
  items <- list()
  cursor <- NULL
  repeat {
    q <- c(query, if (!is.null(cursor)) c(cursor = cursor))
    url <- paste0(path, "?", paste0(names(q), "=", q, collapse = "&"))
    page <- ok_request(client, "GET", url, simplify = FALSE)
    items <- c(items, page[[key]])
    cursor <- page$next_cursor
    if (is.null(cursor)) break
  }
  if (!length(items)) {
    return(data.frame())
  }
  jsonlite::fromJSON(to_json(items), simplifyVector = TRUE)
}

#' State of a training job (GET /jobs/{id}); `curves = TRUE` adds the loss curves so far.
#' @export
ok_job <- function(client, job_id, curves = FALSE) {
  ok_request(client, "GET", paste0("/jobs/", job_id, "?curves=", flag(curves)))
}

#' All training jobs (GET /jobs, every page), oldest first.
#' @export
ok_jobs <- function(client, curves = FALSE) {
  ok_pages(client, "/jobs", "jobs", c(curves = flag(curves)))
}

#' Cancel a training job (DELETE /jobs/{id}).
#' @export
ok_cancel <- function(client, job_id) ok_request(client, "DELETE", paste0("/jobs/", job_id))

#' Poll a job until it ends; returns it when done, raises an `okboost_error` otherwise.
#'
#' @param on_progress called with the job after each poll, e.g. `function(j) print(j$progress)`.
#' @export
ok_wait <- function(client, job_id, poll = 0.2, timeout = Inf, on_progress = NULL) {
  start <- Sys.time()
  repeat {
    info <- ok_job(client, job_id)
    if (!is.null(on_progress)) on_progress(info)
    if (info$state == "done") {
      return(info)
    }
    if (info$state %in% c("failed", "cancelled")) {
      stop(okboost_error(409, paste0("job_", info$state), paste(info$error, collapse = "")))
    }
    if (as.numeric(difftime(Sys.time(), start, units = "secs")) > timeout) {
      stop(sprintf("job %s still %s after %s s", job_id, info$state, timeout))
    }
    Sys.sleep(poll)
  }
}

#' Predicted kernel and edges of new vertices (POST /kernel).
#'
#' @return a list with `kernel` (matrix, unless `return_kernel = FALSE`) and `edges`:
#'   `new_new` and `new_known`, data.frames (a, b, score) of 1-based rows (`new_new`: rows of
#'   `inputs`; `new_known`: a row of `inputs` and a training row), and `new_new_ids`,
#'   `new_known_ids` (data.frames a, b of ids) when the model or `ids` names vertices.
#' @export
ok_kernel <- function(client, model_id, inputs, inputs2 = NULL, against = "predicted",
                      threshold = NULL, top_k = NULL, known_scores = "predicted",
                      return_kernel = TRUE, ids = NULL, ...) {
  table <- as_table(inputs, ids)
  body <- list(
    model_id = model_id, inputs = table$inputs, ids = as_ids(table$ids),
    inputs2 = if (!is.null(inputs2)) as_inputs(inputs2), against = against,
    threshold = threshold, top_k = top_k, known_scores = known_scores,
    return_kernel = return_kernel, ...
  )
  out <- ok_request(client, "POST", "/kernel", body, npz_answer = TRUE)
  if (!is.null(out$kernel)) out$kernel <- matrix(out$kernel, nrow = out$shape[1])
  if (!is.null(out$edges)) {
    out$edges <- sapply(names(out$edges), function(key) {
      as_edges(out$edges[[key]], ids = endsWith(key, "_ids"))
    }, simplify = FALSE)
  }
  out
}

#' Pre-images (and W^F weights) of new inputs (POST /predict).
#'
#' @return a list with `indices` (Q x top_k matrix of 1-based training rows) and `scores`
#'   (squared feature-space distances), `weights` (Q x N) with `weights = "dense"`, and
#'   `weights_sparse` (data.frame row, index, weight; 1-based) with `weights = "sparse"`;
#'   `index_ids` (Q x top_k ids) when the model has vertex ids; `outputs` (Q x top_k x d
#'   array: each pre-image's output vector) with `return_outputs = TRUE`.
#' @export
ok_predict <- function(client, model_id, inputs, top_k = 1, return_outputs = FALSE,
                       weights = "none", weights_top_k = 10, ids = NULL, ...) {
  table <- as_table(inputs, ids)
  body <- list(
    model_id = model_id, inputs = table$inputs, ids = as_ids(table$ids), top_k = top_k,
    return_outputs = return_outputs, weights = weights, weights_top_k = weights_top_k, ...
  )
  out <- ok_request(client, "POST", "/predict", body, npz_answer = TRUE)
  q <- nrow(table$inputs)
  out$indices <- matrix(as.integer(out$indices), nrow = q) + 1L
  out$scores <- matrix(out$scores, nrow = q)
  if (!is.null(out$index_ids)) out$index_ids <- matrix(out$index_ids, nrow = q)
  if (!is.null(out$weights)) out$weights <- matrix(out$weights, nrow = q)
  if (!is.null(out$weights_sparse)) {
    w <- matrix(out$weights_sparse, ncol = 3)
    out$weights_sparse <- data.frame(
      row = as.integer(w[, 1]) + 1L, index = as.integer(w[, 2]) + 1L, weight = w[, 3]
    )
  }
  out
}

#' Scores of a model on held-out inputs with their truth (POST /evaluate).
#'
#' @param inputs Q x p test inputs (matrix, or data.frame with an id column).
#' @param outputs Q x d true outputs (models trained on output vectors), or
#' @param gram_cross Q x N kernel between the true test outputs and the training outputs,
#'   with `gram_diag` (the Q values k(y, y)): give Err^phi and Err^Y.
#' @param new_new edges among the test vertices: two columns of 1-based rows of `inputs`.
#' @param new_known edges from test vertices to training vertices: (1-based row of
#'   `inputs`, 1-based training row). Either may be a character matrix (or data.frame) of
#'   ids instead: the test vertices' `ids` and the model's training ids. Pairs not listed
#'   are non-edges.
#' @param k precision at k: the k training vertices ranked first for each test vertex.
#' @param known_scores how test-training pairs are ranked: "predicted" or "observed".
#' @return a list: `err_phi`, `err_y`, `auc`, `auc_new_new`, `auc_new_known`,
#'   `precision_at_k` (NULL when their truth is not given), `n_test`, `k`, `n_ranked`.
#' @export
ok_evaluate <- function(client, model_id, inputs, outputs = NULL, gram_cross = NULL,
                        gram_diag = NULL, new_new = NULL, new_known = NULL, ids = NULL,
                        k = 10, known_scores = "predicted") {
  table <- as_table(inputs, ids)
  q <- nrow(table$inputs)
  edges <- list()
  if (!is.null(new_new)) edges$new_new <- as_edges_in(new_new, "new_new", q)
  if (!is.null(new_known)) {
    new_known <- edge_matrix(new_known, "new_known")
    # rows of the training set: checked here so that a message counts from 1
    n_train <- if (is.numeric(new_known)) ok_model(client, model_id)$n_train
    edges$new_known <- as_edges_in(new_known, "new_known", q, n_train)
  }
  as_matrix <- function(x, name) if (!is.null(x)) as_table(x, name = name)$inputs
  body <- list(
    model_id = model_id, inputs = table$inputs, ids = as_ids(table$ids),
    outputs = as_matrix(outputs, "outputs"), gram_cross = as_matrix(gram_cross, "gram_cross"),
    gram_diag = if (!is.null(gram_diag)) I(as.double(gram_diag)),
    edges = if (length(edges)) edges, k = k, known_scores = known_scores
  )
  ok_request(client, "POST", "/evaluate", body)
}

#' The stored models (GET /models, every page), oldest first, as a data.frame; `curves` and
#' `importances` add the loss curves and feature importances.
#' @export
ok_models <- function(client, curves = FALSE, importances = FALSE) {
  ok_pages(client, "/models", "models", c(curves = flag(curves), importances = flag(importances)))
}

#' One model's description (GET /models/{id}).
#' @export
ok_model <- function(client, model_id, curves = FALSE, importances = FALSE) {
  query <- paste0("?curves=", flag(curves), "&importances=", flag(importances))
  ok_request(client, "GET", paste0("/models/", model_id, query))
}

#' Delete a model (DELETE /models/{id}).
#' @export
ok_delete_model <- function(client, model_id) {
  ok_request(client, "DELETE", paste0("/models/", model_id))
}

#' Save a model's archive (GET /models/{id}/export) as the .tar.gz file `path`, to import
#' it here or on another server with [ok_import_model()]; returns `path` invisibly.
#' @export
ok_export_model <- function(client, model_id, path) {
  ok_request(client, "GET", paste0("/models/", model_id, "/export"), save_to = path)
}

#' Upload an archive made by [ok_export_model()] (POST /models/import).
#'
#' @param on_conflict when the model's id is taken here: "error" (an `okboost_error`, 409)
#'   or "rename" (the imported model gets a new id).
#' @return the imported model's record (`model_id`, `status`, ...).
#' @export
ok_import_model <- function(client, path, on_conflict = "error") {
  ok_request(client, "POST", paste0("/models/import?on_conflict=", on_conflict), archive = path)
}

#' Readiness of the service (GET /health/ready).
#' @export
ok_health <- function(client) ok_request(client, "GET", "/health/ready")

#' Versions of the service, okcore and the API (GET /version).
#' @export
ok_version <- function(client) ok_request(client, "GET", "/version")
