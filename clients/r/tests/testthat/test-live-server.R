# Tests of the R client against a live okboost server at OKBOOST_URL (the Python test suite
# starts one: tests/e2e/test_clients.py).

url <- Sys.getenv("OKBOOST_URL")

# The walk-through of docs/walkthrough.md: two communities of 4 vertices, A near (0, 1), B near (1, 0), one
# bridge; rows and edges numbered from 1 as in R.
X <- matrix(c(
  0.0, 1.0, 0.1, 0.9, 0.2, 1.0, 0.0, 0.8,
  1.0, 0.0, 0.9, 0.1, 1.0, 0.2, 0.8, 0.0
), ncol = 2, byrow = TRUE)
E <- matrix(c(
  1, 2, 1, 3, 2, 3, 2, 4, 3, 4,
  5, 6, 5, 7, 6, 7, 6, 8, 7, 8, 4, 8
), ncol = 2, byrow = TRUE)
X_new <- matrix(c(0.05, 0.95, 0.95, 0.05), ncol = 2, byrow = TRUE)
params <- list(n_estimators = 50, learning_rate = 0.1, max_splits = 2, random_state = 0)

train_walkthrough <- function(cl) {
  fit <- ok_train(cl, X, list(type = "diffusion", beta = 1, edges = E),
    params = params, name = "r-client"
  )
  expect_true(fit$state %in% c("queued", "running", "done"))
  polls <- 0
  job <- ok_wait(cl, fit$job_id, poll = 0.05, on_progress = function(j) polls <<- polls + 1)
  expect_equal(job$state, "done")
  expect_equal(job$progress$total, params$n_estimators)
  expect_equal(job$progress$done, job$progress$total)
  expect_gte(polls, 1)
  fit$model_id
}

test_that("train, poll the job and ask /kernel for the edges of new vertices", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  model_id <- train_walkthrough(cl)

  out <- ok_kernel(cl, model_id, X_new, against = "predicted", top_k = 2)
  expect_equal(dim(out$kernel), c(2, 2))
  expect_equal(out$kernel[1, 2], out$kernel[2, 1])
  nk <- out$edges$new_known
  expect_s3_class(nk, "data.frame")
  expect_setequal(names(nk), c("a", "b", "score"))
  expect_equal(sum(nk$a == 1), 2)
  expect_true(all(nk$b[nk$a == 1] %in% 1:4)) # the vertex near A links into A
  expect_true(all(nk$b[nk$a == 2] %in% 5:8)) # the one near B into B
  for (i in seq_len(nrow(out$edges$new_new))) {
    e <- out$edges$new_new[i, ]
    expect_equal(e$score, out$kernel[e$a, e$b])
  }

  only <- ok_kernel(cl, model_id, X_new, threshold = 0.1, return_kernel = FALSE)
  expect_null(only$kernel)
  expect_true(all(only$edges$new_known$score >= 0.1))

  pre <- ok_predict(cl, model_id, X_new, top_k = 1)
  expect_true(pre$indices[1, 1] %in% 1:4 && pre$indices[2, 1] %in% 5:8)

  expect_true(model_id %in% ok_models(cl)$model_id)
  expect_equal(ok_model(cl, model_id)$model_id, model_id)
  described <- ok_model(cl, model_id, curves = TRUE, importances = TRUE)
  expect_length(described$train_loss, params$n_estimators)
  expect_length(described$feature_importances, ncol(X))
  jobs <- ok_jobs(cl)
  job <- ok_job(cl, jobs$job_id[jobs$model_id == model_id], curves = TRUE)
  expect_length(job$train_loss, params$n_estimators)
  ok_delete_model(cl, model_id)
  err <- tryCatch(ok_model(cl, model_id), okboost_error = function(e) e)
  expect_s3_class(err, "okboost_error")
  expect_equal(err$status, 404)
})

test_that("binary parts and JSON give the same model and answers", {
  skip_if(url == "", "OKBOOST_URL is not set")
  binary <- okboost_client(url)
  json <- okboost_client(url, binary = FALSE)
  a <- train_walkthrough(binary)
  b <- train_walkthrough(json)
  ka <- ok_kernel(binary, a, X_new, top_k = 2)
  kb <- ok_kernel(json, b, X_new, top_k = 2)
  expect_equal(ka$kernel, kb$kernel, tolerance = 1e-12)
  expect_equal(ka$edges$new_known[, c("a", "b")], kb$edges$new_known[, c("a", "b")])
  ok_delete_model(binary, a)
  ok_delete_model(binary, b)
})

test_that("errors are okboost_error conditions with the service's status and code", {
  skip_if(url == "", "OKBOOST_URL is not set")
  cl <- okboost_client(url)
  err <- tryCatch(
    ok_train(cl, X, list(type = "diffusion", beta = -1, edges = E), params = params),
    okboost_error = function(e) e
  )
  expect_s3_class(err, "okboost_error")
  expect_equal(err$status, 422)
  expect_match(conditionMessage(err), "beta")
  # rows are checked here, so that the message counts from 1 as R does
  expect_error(
    ok_train(cl, X, list(type = "diffusion", beta = 1, edges = rbind(c(1, 99)))),
    "99 is not a vertex: rows count from 1 to 8"
  )
  expect_error(ok_kernel(cl, strrep("0", 32), X_new), class = "okboost_error")
  expect_equal(ok_health(cl)$status, "ready")
})

test_that("vertex ids: edges by id in, edges and pre-images by id out", {
  skip_if(url == "", "OKBOOST_URL is not set")
  cl <- okboost_client(url)
  ids <- sprintf("paper-%d", seq_len(nrow(X)))
  by_id <- matrix(ids[E], ncol = 2)
  fit <- ok_train(cl, X, list(type = "diffusion", beta = 1, edges = by_id),
    ids = ids, params = params
  )
  ok_wait(cl, fit$job_id, poll = 0.05)
  out <- ok_kernel(cl, fit$model_id, X_new, top_k = 2, ids = c("new-A", "new-B"))
  nk <- out$edges$new_known
  named <- out$edges$new_known_ids
  expect_equal(nrow(named), nrow(nk))
  expect_equal(named$a, c("new-A", "new-B")[nk$a])
  expect_equal(named$b, ids[nk$b])
  one <- ok_kernel(cl, fit$model_id, X_new[1, , drop = FALSE], top_k = 1, ids = "solo")
  expect_equal(unique(one$edges$new_known_ids$a), "solo") # one id is still a list of ids
  pre <- ok_predict(cl, fit$model_id, X_new, top_k = 1)
  expect_equal(pre$index_ids[, 1], ids[pre$indices[, 1]])
  ok_delete_model(cl, fit$model_id)
})

test_that("binary answers (.npz) give the same R values as JSON answers", {
  skip_if(url == "", "OKBOOST_URL is not set")
  binary <- okboost_client(url)
  json <- okboost_client(url, binary = FALSE)
  ids <- sprintf("v%d", seq_len(nrow(X)))
  fit <- ok_train(binary, X, list(type = "diffusion", beta = 1, edges = E),
    ids = ids, params = params
  )
  ok_wait(binary, fit$job_id, poll = 0.05)
  for (ask in list(
    list(top_k = 2, ids = c("n1", "n2")),
    list(threshold = 0.05, return_kernel = FALSE),
    list(against = "training")
  )) {
    a <- do.call(ok_kernel, c(list(binary, fit$model_id, X_new), ask))
    b <- do.call(ok_kernel, c(list(json, fit$model_id, X_new), ask))
    expect_equal(a$model_id, b$model_id)
    expect_equal(as.integer(a$shape), as.integer(b$shape))
    expect_equal(a$kernel, b$kernel)
    expect_equal(a$edges, b$edges)
  }
  for (weights in c("none", "sparse", "dense")) {
    a <- ok_predict(binary, fit$model_id, X_new, top_k = 2, weights = weights)
    b <- ok_predict(json, fit$model_id, X_new, top_k = 2, weights = weights)
    for (key in c("indices", "scores", "index_ids", "weights", "weights_sparse")) {
      expect_equal(a[[key]], b[[key]], info = paste(weights, key))
    }
  }
  expect_equal(httr2::resp_content_type(httr2::last_response()), "application/json")
  ok_delete_model(binary, fit$model_id)
})

test_that("ok_train with no model gets the server's default: the automatic choice", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  outputs <- cbind(X[, 1] + X[, 2], X[, 1] - X[, 2])
  fit <- ok_train(cl, X, list(type = "linear", outputs = outputs),
    params = list(max_cpu_seconds = 5, random_state = 0), wait = TRUE
  )
  expect_equal(fit$model$model, "auto")
  expect_gt(length(fit$model$auto$leaderboard), 0)
})

test_that("NA and NaN are missing values: a tree model takes them, binary and JSON", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  holes <- X
  holes[2, 1] <- NA
  holes[6, 2] <- NaN
  outputs <- cbind(X[, 1] + X[, 2], X[, 1] - X[, 2])
  outputs[3, 2] <- NA # an unknown output entry
  for (binary in c(TRUE, FALSE)) {
    cl <- okboost_client(url, binary = binary)
    fit <- ok_train(cl, holes, list(type = "linear", outputs = outputs),
      model = "okboost", params = params, wait = TRUE
    )
    expect_equal(fit$model$status, "ready")
    pre <- ok_predict(cl, fit$model_id, rbind(c(NA, 0.95), c(0.95, NaN)),
      candidates = outputs[-3, ]
    )
    expect_equal(dim(pre$indices), c(2L, 1L))
    err <- tryCatch(
      ok_train(cl, holes, list(type = "linear", outputs = X), model = "krr"),
      okboost_error = function(e) e
    )
    expect_equal(err$status, 422) # the service names the models that take missing values
    expect_match(conditionMessage(err), "missing values")
    ok_delete_model(cl, fit$model_id)
  }
})

test_that("export a model's archive and import it again: a 409 while its id is taken", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  model_id <- train_walkthrough(cl)
  archive <- tempfile(fileext = ".tar.gz")
  expect_equal(ok_export_model(cl, model_id, archive), archive)
  expect_equal(readBin(archive, "raw", 2), as.raw(c(0x1f, 0x8b))) # gzip
  err <- tryCatch(ok_import_model(cl, archive), okboost_error = function(e) e)
  expect_equal(err$status, 409)
  copy <- ok_import_model(cl, archive, on_conflict = "rename")
  expect_false(copy$model_id == model_id)
  expect_equal(copy$status, "ready")
  expect_equal(ok_kernel(cl, copy$model_id, X_new)$kernel, ok_kernel(cl, model_id, X_new)$kernel)
  ok_delete_model(cl, model_id)
  expect_equal(ok_import_model(cl, archive)$model_id, model_id) # its id is free again
  expect_error(ok_export_model(cl, strrep("0", 32), archive), class = "okboost_error")
  for (id in c(model_id, copy$model_id)) ok_delete_model(cl, id)
})

test_that("return_outputs: a Q x top_k x d array, binary and JSON; one weight stays an array", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  outputs <- cbind(X[, 1] + X[, 2], X[, 1] - X[, 2])
  answers <- list()
  for (binary in c(TRUE, FALSE)) {
    cl <- okboost_client(url, binary = binary)
    fit <- ok_train(cl, X, list(type = "linear", outputs = outputs),
      model = "okboost", params = params, wait = TRUE
    )
    pre <- ok_predict(cl, fit$model_id, X_new, top_k = 2, return_outputs = TRUE)
    expect_equal(dim(pre$outputs), c(2L, 2L, 2L))
    for (q in 1:2) {
      for (j in 1:2) expect_equal(pre$outputs[q, j, ], outputs[pre$indices[q, j], ])
    }
    answers[[length(answers) + 1]] <- pre$outputs
    one <- ok_train(cl, X, list(type = "linear", outputs = outputs[, 1, drop = FALSE]),
      model = "okboost", params = params, output_weight = 2, wait = TRUE
    )
    expect_equal(one$model$status, "ready")
    for (id in c(fit$model_id, one$model_id)) ok_delete_model(cl, id)
  }
  expect_equal(answers[[1]], answers[[2]])
})

test_that("every page of models is one data.frame, whatever types its fields take per page", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  ids <- vapply(list(FALSE, "auto"), function(early) {
    ok_train(cl, X, list(type = "diffusion", beta = 1, edges = E), model = "okboost",
      params = c(params, early_stopping = early), wait = TRUE
    )$model_id
  }, "")
  # one model per page: params$early_stopping is FALSE on one page, "auto" on another
  one_per_page <- ok_pages(cl, "/models", "models", c(limit = 1, curves = "false"))
  expect_s3_class(one_per_page, "data.frame")
  expect_true(all(ids %in% one_per_page$model_id))
  expect_equal(one_per_page$model_id, ok_models(cl)$model_id)
  for (id in ids) ok_delete_model(cl, id)
})
